"""Package files read without leaving the package (issue 11, item 3).

A symlink or a special file (FIFO, /dev/zero) where a package file or an output is expected is refused with a
message naming it, before any work, never followed, read or written through.
"""

from __future__ import annotations

import os

import pytest

from conformance.certify.testjson import load_test_cases
from conformance.engine.package import load_package
from conformance.errors import ConformanceError
from conformance.files import copy_package
from conformance.tools.proposal import vec4_per_thread
from tests.hostile.conftest import run_cli, victim

GELU = "com.microsoft.Gelu"


# -- reads ----------------------------------------------------------------------------------------
def test_a_symlinked_manifest_outside_the_package_is_refused(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    outside = tmp_path / "elsewhere.json"
    (specs / GELU / "manifest.json").rename(outside)
    (specs / GELU / "manifest.json").symlink_to(outside)
    with pytest.raises(ConformanceError, match="outside the package directory"):
        load_package(specs / GELU)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "outside"])
def test_lint_reads_no_special_or_outside_template(tmp_path, make_specs, kind):
    specs = make_specs(**{GELU: GELU, "com.microsoft.FastGelu": "com.microsoft.FastGelu"})
    extra = specs / GELU / "extra.wgsl.jinja"
    if kind == "dev-zero":
        extra.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(extra)
    else:
        extra.symlink_to(victim(tmp_path))
    proc = run_cli("-m", "conformance", "lint", str(specs), "--no-compile", timeout=300)  # a FIFO read would hang
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert "extra.wgsl.jinja" in proc.stdout
    assert ("outside the package" if kind == "outside" else "not a regular file") in proc.stdout, proc.stdout


@pytest.mark.parametrize("kind", ["fifo", "outside"])
def test_package_copies_for_mutate_and_proposals_refuse_special_and_outside_files(tmp_path, make_specs, kind):
    specs = make_specs(**{GELU: GELU})
    extra = specs / GELU / "notes.txt"
    if kind == "fifo":
        os.mkfifo(extra)
    else:
        extra.symlink_to(victim(tmp_path))
    with pytest.raises(ConformanceError, match="not a regular file" if kind == "fifo" else "outside the package"):
        copy_package(specs / GELU, tmp_path / "copy")  # what mutate and bench --proposal copy with
    with pytest.raises(ConformanceError):
        vec4_per_thread(specs / GELU, 2, tmp_path / "proposal")


def test_a_fifo_test_json_fails_its_package_without_hanging(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    os.mkfifo(specs / GELU / "test.json")
    with pytest.raises(ConformanceError, match="not a regular file"):
        load_test_cases(load_package(specs / GELU))
