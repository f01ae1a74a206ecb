"""``certify`` never writes or reads outside the checkout through a link a pull request commits (issue 40, item 1).

It used to resolve the paths it was given before checking them, and its pytest runs in a scratch folder where
the link check (links below the current directory) never applied: ``out -> /elsewhere`` received the reports,
``out/kernels.json -> /a/file`` replaced that file, a linked ``kernel-cases/`` was read.
"""

from __future__ import annotations

import os
import shutil

import pytest

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import ROOT, run_cli, victim

GELU = "com.microsoft.Gelu"
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv.pop(1)); import pytest; sys.exit(pytest.main(sys.argv[1:]))"


@pytest.fixture
def checkout(tmp_path):
    pr = tmp_path / "pr"
    shutil.copytree(REPO_SPECS / GELU, pr / "kernels" / GELU)
    (tmp_path / "elsewhere").mkdir()
    return pr


def certify(pr, *args):
    return run_cli("-P", "-m", "conformance", "certify", "--specs", "kernels", "--device", "vulkan", *args, cwd=pr)


def refused(proc, link: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-2000:]
    assert "refusing a path through a symlink" in out and link in out, out[-2000:]
    assert "Traceback" not in out, out[-3000:]


def test_a_linked_report_folder_is_refused_and_nothing_is_written_there(checkout):
    elsewhere = checkout.parent / "elsewhere"
    (checkout / "out").symlink_to(elsewhere)
    refused(certify(checkout, "--report", "out/kernels.json"), f"{checkout / 'out'} -> {elsewhere}")
    assert list(elsewhere.iterdir()) == []


def test_a_linked_report_file_is_refused_and_its_target_kept(checkout, tmp_path):
    target = victim(tmp_path)
    (checkout / "out").mkdir()
    (checkout / "out" / "kernels.json").symlink_to(target)
    refused(certify(checkout, "--report", "out/kernels.json"), "out/kernels.json")
    assert target.read_text() == "precious\n"


@pytest.mark.parametrize("flag", ["--golden", "--expectations", "--repro-dir"])
def test_a_linked_input_or_output_folder_is_refused(checkout, flag):
    (checkout.parent / "elsewhere" / "x.yaml").write_text("{}\n")
    (checkout / "linked").symlink_to(checkout.parent / "elsewhere")
    name = "linked/x.yaml" if flag == "--expectations" else "linked"
    refused(certify(checkout, flag, name, "--report", "out/kernels.json"), f"{flag} {name}")
    assert not (checkout / "out").exists()


@pytest.mark.parametrize("option, value", [("--conformance-report", "out/kernels.json"), ("--golden", "kernel-cases")])
def test_the_scratch_run_refuses_links_below_the_checkout_it_is_told_of(checkout, tmp_path, option, value):
    """Its own check, not only certify's: pytest in the scratch folder, as certify starts it, given the absolute
    path through the link and the checkout in CONFORMANCE_CHECKOUT."""
    elsewhere = tmp_path / "elsewhere"
    (checkout / value.split("/")[0]).symlink_to(elsewhere)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "pytest.ini").write_text("[pytest]\n")
    proc = run_cli(
        "-I",
        "-c",
        BOOTSTRAP,
        str(ROOT),
        "-c",
        str(scratch / "pytest.ini"),
        "--rootdir",
        str(scratch),
        "--noconftest",
        "-p",
        "no:cacheprovider",
        "-p",
        "conformance.plugin",
        "-q",
        "--pyargs",
        "conformance.test_kernels",
        f"--specs={checkout / 'kernels'}",
        "--device=vulkan",
        f"{option}={checkout / value}",
        cwd=scratch,
        env={"CONFORMANCE_CHECKOUT": str(checkout), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4 and f"{checkout / value.split('/')[0]} -> {elsewhere}" in out, out[-2000:]
    assert "Traceback" not in out and list(elsewhere.iterdir()) == [], out[-2000:]
    assert os.environ.get("CONFORMANCE_CHECKOUT") is None  # the variable is certify's, for its own child only
