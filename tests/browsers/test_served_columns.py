"""Any browser is a column (issue 31): real browsers opened at the served URL, with no driver, judged as the others.

Marked ``browsers`` (``--run-browsers``): each opens one or two headless browsers and runs a package's cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from conformance.gpu.backends.served import PageServer
from conformance.gpu.device import devices
from conformance.plugin.expectations import id_pattern
from conformance.tools.serve import ColumnRun, load_packages
from tests.browsers.conftest import serve
from tests.hostile.conftest import TEMPLATE, edit, make_specs, run_conformance  # noqa: F401 (a fixture)
from tests.hostile.test_broken_kernels import GELU, HANG_CASE, _hanging_gelu

pytestmark = pytest.mark.browsers


def _verdicts(report: dict) -> dict:
    return {c["id"]: (c["status"], c["variant"]) for c in report["cases"]}


def _pytest_column(tmp_path, specs, webgpu) -> dict:
    path = tmp_path / f"{webgpu}.json"
    proc = run_conformance(specs, f"--webgpu={webgpu}", f"--conformance-report={path}", timeout=600)
    assert path.exists(), (proc.stdout + proc.stderr)[-3000:]
    return json.loads(path.read_text())


def test_served_chromium_and_firefox_judge_as_the_driven_columns(tmp_path, make_specs, open_browser):
    """Chromium and Firefox opened at the URL (no Playwright): the Chromium page's verdicts equal the
    Playwright-driven column's case by case (status and variant); Firefox's equal wgpu-native's (status: its own
    limits may plan another variant), with its f16 cases run, not rejected."""
    specs = make_specs(**{GELU: GELU})
    out = tmp_path / "served"
    proc, url, _ = serve(specs, "--columns", "2", "--report", str(out))
    try:
        open_browser("chromium", url)
        open_browser("firefox", url)
        text = proc.communicate(timeout=600)[0]
    finally:
        proc.kill()
    reports = {p.stem.split("-")[0]: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(reports) == ["chrome", "firefox"], text[-2000:]
    assert proc.returncode == 0, text[-3000:]
    driven = _pytest_column(tmp_path, specs, "chromium")
    native = _pytest_column(tmp_path, specs, "wgpu")
    assert _verdicts(reports["chrome"]) == _verdicts(driven)
    assert {i: s for i, (s, _) in _verdicts(reports["firefox"]).items()} == {
        i: s for i, (s, _) in _verdicts(native).items()
    }
    firefox = reports["firefox"]
    assert "Firefox" in firefox["device"]["backend"] and "shader-f16" in firefox["device"]["features"]
    f16 = [c for c in firefox["cases"] if c["dtype"] == "float16" and c["variant"] != "rejected"]
    assert f16 and all(c["status"] == "passed" for c in f16)
    total = sum(len(cases) for _, cases, _ in load_packages(specs))  # what a column runs
    assert "chrome" in text and "firefox" in text and f"/ {total} cases" in text  # the terminal's progress lines
    merged = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "merge",
            *map(str, sorted(out.glob("*.json"))),
            "--json",
            str(tmp_path / "matrix.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert merged.returncode == 0, merged.stderr
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    assert len(matrix["columns"]) == 2 and matrix["disagreements"] == []


def _column(tmp_path, specs, select, open_browser, *, timeout=4.0, during=None):
    """One Firefox page's column, run in this process: (its report, the browser)."""
    runs = []
    server = PageServer(
        timeout=timeout,
        on_page=lambda c: runs.append(
            ColumnRun(
                c,
                load_packages(specs, keep=lambda i: any(id_pattern(g).fullmatch(i) for g in select)),
                tmp_path / "out",
                reconnect_timeout=120,
            )
        ),
    )
    try:
        browser = open_browser("firefox", server.url_of(server.client("ff")))
        deadline = time.monotonic() + 120
        while not runs and time.monotonic() < deadline:
            time.sleep(0.1)
        assert runs, "Firefox never opened the page"
        run = runs[0]
        worker = threading.Thread(target=run.run, daemon=True)
        worker.start()
        if during is not None:
            during(run, browser)
        worker.join(600)
        assert run.done.is_set(), f"the column did not finish: {len(run.verdicts)} / {run.total}"
        return run.data, browser
    finally:
        server.close()
        devices.release()


#: 7 cases as globs (the hostile tests' SELECT): 2 before HANG_CASE in run order, 4 after it.
SELECT = [
    "Gelu/f32/X[5]/scalar",
    "Gelu/f32/X[7]/scalar",
    "Gelu/f32/X[4097]/scalar*",
    "Gelu/f32/X[4096]/vec4*",
    "Gelu/f32/X[1024]/vec4*",
]


def _statuses(data):
    return {c["id"]: c["status"] for c in data["cases"]}


def test_a_hung_kernel_fails_only_its_case_in_the_served_page(tmp_path, make_specs, open_browser):
    """The page does not answer (a shader that spins ~10 s): past the timeout the case fails, the page's own
    watchdog reloads it, and the next case runs on the reloaded page."""
    specs = make_specs(**{GELU: GELU})
    _hanging_gelu(specs, 64)
    data, _ = _column(tmp_path, specs, SELECT, open_browser)
    statuses = _statuses(data)
    hang = HANG_CASE
    assert statuses[hang] == "failed" and len(statuses) == 7, statuses
    assert all(s == "passed" for i, s in statuses.items() if i != hang), statuses
    detail = next(c["detail"] for c in data["cases"] if c["id"] == hang)
    assert "did not answer within 4 s" in detail, detail


def test_a_write_past_the_output_fails_only_its_cases_in_the_served_page(tmp_path, make_specs, open_browser):
    """The scalar tail writes one element past the end of Y: the guard region bound after it catches it."""
    specs = make_specs(**{GELU: GELU})
    edit(
        specs / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count) { return; }\n{% if not vec4 %}  if (i == 0u) { y[params.count] = "
        "{{ scalar }}(7.0); }\n{% endif %}",
    )
    data, _ = _column(tmp_path, specs, SELECT, open_browser)
    statuses = _statuses(data)
    scalar = {i for i in statuses if "/scalar" in i}
    assert scalar and all(statuses[i] == "failed" for i in scalar), statuses
    assert all(s == "passed" for i, s in statuses.items() if i not in scalar), statuses
    details = [c["detail"] for c in data["cases"] if c["id"] in scalar]
    assert all("wrote past the end of the output" in d for d in details), details[0][:500]


def test_a_crashed_tab_fails_its_case_and_the_reopened_page_resumes(tmp_path, make_specs, open_browser):
    """While the spinning case runs, the browser's processes are killed (the tab crashes with it); the case fails,
    and the URL opened again (as a person reopens the tab) resumes the column with the next case."""
    specs = make_specs(**{GELU: GELU})
    _hanging_gelu(specs, 64)

    def crash_then_reopen(run, browser):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(run.verdicts) < 2:  # HANG_CASE runs third
            time.sleep(0.05)
        time.sleep(1.0)  # backstop only: the spinning dispatch lasts ~10 s
        browser.stop()
        while time.monotonic() < deadline and len(run.verdicts) < 3:
            time.sleep(0.1)
        browser.start()

    data, _ = _column(tmp_path, specs, SELECT, open_browser, during=crash_then_reopen)
    statuses = _statuses(data)
    hang = HANG_CASE
    assert statuses[hang] == "failed" and len(statuses) == 7, statuses
    assert all(s == "passed" for i, s in statuses.items() if i != hang), statuses
