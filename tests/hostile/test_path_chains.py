"""Confined paths everywhere (issue 28, class 9): a symlink anywhere below the current directory in a path the
suite writes or reads is refused, not only as the last component; writes replace a file instead of writing
through its inode (a hard link keeps its content); a golden file linked to a file outside is never read or
printed."""

from __future__ import annotations

import json
import os

from tests.conftest import UNUSED_PLUGINS
from tests.hostile.conftest import ROOT, run_cli, run_conformance, victim

GELU = "com.microsoft.Gelu"


def _linked_folder(tmp_path, name: str):
    """(a repository whose ``name`` is a symlink to a folder outside it, that folder)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / name).symlink_to(outside)
    return repo, outside


def test_cases_refuses_a_symlinked_output_folder(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    repo, outside = _linked_folder(tmp_path, "kernel-cases")
    proc = run_cli("-m", "cases", "--specs", str(specs), "--out", "kernel-cases", cwd=repo, timeout=120)
    assert proc.returncode == 2 and "symlink" in proc.stderr, proc.stdout + proc.stderr
    assert list(outside.iterdir()) == []


def test_a_report_under_a_symlinked_folder_is_refused_before_any_case_runs(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    repo, outside = _linked_folder(tmp_path, "out")
    proc = run_cli(
        "-m",
        "pytest",
        str(ROOT / "conformance"),
        f"--specs={specs}",
        "-p",
        "no:cacheprovider",
        *UNUSED_PLUGINS,
        "--conformance-report=out/report.json",
        "-k",
        "X[5]",
        cwd=repo,
    )
    assert proc.returncode != 0 and "symlink" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    assert list(outside.iterdir()) == []


def test_export_into_a_symlinked_package_folder_is_refused(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    repo = tmp_path / "repo"
    (repo / "kernels").mkdir(parents=True)
    (repo / "kernels" / GELU).symlink_to(specs / GELU)
    proc = run_cli("-m", "conformance", "export", f"kernels/{GELU}", cwd=repo)
    assert proc.returncode == 2 and "symlink" in proc.stderr, proc.stdout + proc.stderr
    assert not (specs / GELU / "test.json").exists()


def test_a_write_replaces_a_hard_linked_file_instead_of_writing_through_it(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    precious = victim(tmp_path)
    os.link(precious, specs / GELU / "test.json")
    proc = run_cli("-m", "conformance", "export", str(specs / GELU), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert precious.read_text() == "precious\n"
    assert json.loads((specs / GELU / "test.json").read_text())["cases"]


def test_a_golden_file_linked_outside_is_neither_read_nor_printed(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    secret = tmp_path / "secret.yaml"
    secret.write_text("package: com.microsoft.Gelu\ncases: []\n# SECRET-TOKEN-1234\n")
    repo = tmp_path / "repo"
    (repo / "kernel-cases").mkdir(parents=True)
    (repo / "kernel-cases" / f"{GELU}.yaml").symlink_to(secret)
    proc = run_cli("-m", "cases", "--check", "--specs", str(specs), "--out", "kernel-cases", cwd=repo, timeout=120)
    assert proc.returncode != 0 and "SECRET-TOKEN" not in proc.stdout + proc.stderr, proc.stdout[-2000:]
    assert "symlink" in proc.stdout + proc.stderr


def test_expectations_naming_a_link_to_dev_zero_is_a_clear_error(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    (tmp_path / "known.yaml").symlink_to("/dev/zero")
    proc = run_conformance(specs, f"--expectations={tmp_path / 'known.yaml'}", "-k", "X[5]")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4 and "INTERNALERROR" not in out and "MemoryError" not in out, out[-2000:]
    assert "--expectations" in out and "not a regular file" in out, out[-2000:]
