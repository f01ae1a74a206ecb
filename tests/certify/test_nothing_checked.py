"""A run that checked nothing never "conforms" and never exits 0 (issue 36): an implementation that is not
available here (one error up front, naming what is missing), one that implements none of the packages, ONNX
Runtime Web without its npm package, a selection that matches no case, and the same through ``certify``; a run
that checked some cells and could not run others says which."""

import json
import subprocess
import sys

import pytest

from tests.certify.conftest import REPO, run_conformance

GELU = str(REPO / "specs" / "com.microsoft.Gelu")
UNAVAILABLE = "--impl=tests.certify.unrunnable_impls:Unavailable"
SUPPORTS_NOTHING = "--impl=tests.certify.unrunnable_impls:SupportsNothing"


def _report(path):
    return json.loads(path.read_text())


def test_an_unavailable_implementation_is_one_error_up_front_and_checks_nothing(tmp_path):
    report = tmp_path / "r.json"
    proc = run_conformance(UNAVAILABLE, f"--specs={GELU}", f"--conformance-report={report}")
    assert proc.returncode != 0, proc.stdout[-2000:]
    out = proc.stdout
    assert out.count("the frobnicator library is not installed (pip install frobnicator)") == 2, out[-3000:]
    assert "Traceback" not in out and "skipped" not in out, out[-3000:]  # no skip per case, no traceback
    assert "result: nothing checked" in out
    data = _report(report)
    assert data["result"] == "nothing-checked" and not data["conforms"] and data["cases"] == []
    assert "is not available here" in data["error"] and "pip install frobnicator" in data["error"]
    assert "pip install frobnicator" in report.with_suffix(".md").read_text()


def test_an_unavailable_implementation_under_xdist_is_the_same_one_error(tmp_path):
    proc = run_conformance(UNAVAILABLE, f"--specs={GELU}", "-n", "2")
    assert proc.returncode != 0
    assert "is not available here: unavailable: the frobnicator library" in proc.stdout, proc.stdout[-3000:]
    assert "INTERNALERROR" not in proc.stdout + proc.stderr and "result: nothing checked" in proc.stdout


def test_an_implementation_that_supports_no_package_checks_nothing(tmp_path):
    report = tmp_path / "r.json"
    proc = run_conformance(SUPPORTS_NOTHING, f"--specs={GELU}", f"--conformance-report={report}")
    data = _report(report)
    assert data["totals"]["skipped"] == len(data["cases"]) > 100 and data["totals"]["failed"] == 0
    assert data["result"] == "nothing-checked" and proc.returncode == 1, proc.stdout[-2000:]
    whole = [u for u in data["unchecked"] if u["variant"] is None]
    assert [u["package"] for u in whole] == ["com.microsoft.Gelu"]
    assert "skipped (supports-nothing implements no package, not com.microsoft.Gelu)" in whole[0]["why"]


def test_without_a_report_the_exit_status_still_follows_the_result():
    proc = run_conformance(SUPPORTS_NOTHING, f"--specs={GELU}")
    assert proc.returncode == 1 and "result: nothing checked" in proc.stdout, proc.stdout[-2000:]


# the last: a selection pytest refuses (a usage error after collection) selected nothing; no case went missing
@pytest.mark.parametrize("select", [("-k", "no-such-case"), ("-m", "no_such_marker"), ("-m", "(")])
def test_a_selection_that_matches_no_case_checks_nothing(tmp_path, select):
    report = tmp_path / "r.json"
    proc = run_conformance(f"--specs={GELU}", *select, f"--conformance-report={report}")
    assert proc.returncode != 0, proc.stdout[-2000:]
    data = _report(report)
    assert data["result"] == "nothing-checked" and data["cases"] == [] and not data["conforms"]
    assert "result: nothing checked" in proc.stdout
    assert "no conformance case was selected" in proc.stdout


def test_onnxruntime_web_without_its_npm_package_is_one_error_naming_npm_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_ORT_WEB", str(tmp_path / "no-such-package"))
    proc = run_conformance("--impl=onnxruntime-web", "--webgpu=chromium", f"--specs={GELU}")
    assert proc.returncode != 0
    assert "ONNX Runtime Web is not installed" in proc.stdout and "run `npm ci`" in proc.stdout, proc.stdout[-3000:]
    assert "skipped" not in proc.stdout and "result: nothing checked" in proc.stdout


def _certify(tmp_path, *args):
    report = tmp_path / "out" / "kernels.json"
    cmd = [
        sys.executable,
        "-P",
        "-m",
        "conformance",
        "certify",
        "--device",
        "vulkan",
        "--specs",
        GELU,
        "--report",
        str(report),
        *args,
    ]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env), report


def test_certify_with_an_unavailable_implementation_fails(tmp_path):
    proc, report = _certify(tmp_path, UNAVAILABLE)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "pip install frobnicator" in proc.stdout
    assert _report(report)["result"] == "nothing-checked"


def test_certify_exits_non_zero_for_nothing_checked(tmp_path):
    proc, report = _certify(tmp_path, SUPPORTS_NOTHING)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert _report(report)["result"] == "nothing-checked"


def test_the_js_loader_without_its_npm_package_is_one_error_naming_npm_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_JINJA_JS", str(tmp_path / "no-such-package"))
    proc = run_conformance("--impl=js-loader", "--webgpu=chromium", f"--specs={GELU}")
    assert proc.returncode != 0
    assert "@huggingface/jinja is not installed" in proc.stdout and "run `npm ci`" in proc.stdout, proc.stdout[-3000:]
    assert "skipped" not in proc.stdout and "result: nothing checked" in proc.stdout
