"""Ctrl-C during a run (issue 11, item 10): once, the run stops, releases the device and writes the partial
report marked interrupted; twice, the process exits at once. No device is opened while finishing."""

from __future__ import annotations

import json
import textwrap

from tests.hostile.conftest import ROOT, run_conformance

GELU = "com.microsoft.Gelu"

PLUGIN = textwrap.dedent("""
    import os, signal
    import pytest
    from conformance.gpu import device as device_module

    SEEN = []

    def pytest_runtest_setup(item):
        SEEN.append(item.nodeid)
        if len(SEEN) == 4:                      # Ctrl-C while the fourth case starts
            os.kill(os.getpid(), signal.SIGINT)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(session):
        def refuse(*args, **kwargs):
            raise AssertionError("a device was opened while finishing the session")
        for name in ("get_device", "open_device"):
            if hasattr(device_module, name):
                setattr(device_module, name, refuse)
        if os.environ.get("SECOND_SIGINT"):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C again, while finishing
""")


def _run(tmp_path, make_specs, env):
    specs = make_specs(**{GELU: GELU})
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "ctrl_c.py").write_text(PLUGIN)
    report = tmp_path / "report.json"
    proc = run_conformance(
        specs,
        "-k",
        "f32",
        f"--conformance-report={report}",
        "-p",
        "ctrl_c",
        timeout=180,
        env={"PYTHONPATH": f"{ROOT}:{tmp_path / 'plugins'}", **env},
    )
    return proc, report


def test_one_ctrl_c_writes_the_partial_report_marked_interrupted(tmp_path, make_specs):
    proc, report = _run(tmp_path, make_specs, {})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]  # pytest's "interrupted"
    assert "INTERNALERROR" not in out and "opened while finishing" not in out, out[-3000:]
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["conforms"] is False
    statuses = [c["status"] for c in data["cases"]]
    assert statuses.count("passed") == 3, statuses  # the three cases before the Ctrl-C
    not_run = [c for c in data["cases"] if c["status"] == "not-run"]
    assert not_run and all("interrupted" in c["detail"] for c in not_run)
    assert "interrupted" in report.with_suffix(".md").read_text()


def test_a_second_ctrl_c_exits_at_once(tmp_path, make_specs):
    proc, report = _run(tmp_path, make_specs, {"SECOND_SIGINT": "1"})
    assert proc.returncode == 130, (proc.stdout + proc.stderr)[-3000:]
    assert "interrupted again" in proc.stderr
    assert not report.exists()
