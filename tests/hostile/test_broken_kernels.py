"""Broken kernels and devices (issue 10): each fails only its own cases, with a clear message, and the run
goes on and reports them.  Every scenario is a real ``pytest conformance/ --specs <tmp packages>`` run in a
subprocess, on the Vulkan device, with the cases it concerns selected by ``-k``.

A shader that never finishes: lavapipe caps every loop at 65535 iterations, so a ``loop {}`` ends by itself;
what does not end is a dispatch of very many threads that each spin that long.  The tests make one case
(HANG_CASE) dispatch ``factor`` x 4097 such threads.  Lavapipe cannot cancel the work, and while it runs no
other device of the process can open or run (one thread pool per process): so the case times out
(``CONFORMANCE_DISPATCH_TIMEOUT``), its device is abandoned, and the next case waits at most
``CONFORMANCE_DEVICE_RECOVERY_TIMEOUT`` for the work to drain before it opens a fresh device -- or, past it,
every later case fails at once with a 'no fresh device' message.  The run always finishes.

The timeouts under test are wall-clock backstops, so the hangs are sized for any machine: one lasts about a day,
and the one that must drain is sized from a measurement of the spin on this machine, now, to last a fixed multiple
of the limit (DRAIN_MULTIPLE).  No assertion reads the run's duration; the subprocess timeouts only keep a
regression from stalling the suite.
"""

from __future__ import annotations

import json
import math
import shutil
import textwrap
import time

import numpy as np
import pytest

from conformance import load_kernel
from conformance.gpu.device import get_device
from tests.hostile.conftest import ROOT, TEMPLATE, edit, run_conformance

GELU, FASTGELU = "com.microsoft.Gelu", "com.microsoft.FastGelu"
SELECT = (
    "(Gelu/f32/X[5]/scalar or Gelu/f32/X[7]/scalar or Gelu/f32/X[4097]/scalar or Gelu/f32/X[4096]/vec4 or "
    "Gelu/f32/X[1024]/vec4) and not WORKGROUP_SIZE"
)  # 8 cases ('-k' cannot say '@'): 2 before HANG_CASE,
# 5 after it
HANG_CASE = "Gelu/f32/X[4097]/scalar"
DISPATCH_LIMIT_S = 2  # CONFORMANCE_DISPATCH_TIMEOUT in these runs
DRAIN_MULTIPLE = 6  # the draining hang lasts about this many times the limit, on any machine
FOREVER = 2**19  # about a day of spinning on this machine: longer than any limit anywhere
BEFORE_HANG = {"Gelu/f32/X[5]/scalar", "Gelu/f32/X[7]/scalar"}  # in run order (the report sorts the cases)


def _report(tmp_path, proc):
    out = proc.stdout + proc.stderr
    path = tmp_path / "report.json"
    assert path.exists(), out[-3000:]
    data = json.loads(path.read_text())
    return {c["id"]: c for c in data["cases"]}, out


def _statuses(cases):
    return {case_id: c["status"] for case_id, c in cases.items()}


@pytest.mark.parametrize("webgpu", ["wgpu", "dawn", "chromium", "firefox"])
def test_compile_error_and_out_of_bounds_write_fail_only_their_cases(tmp_path, make_specs, webgpu):
    """The same broken kernels fail the same cases, for the same reasons, on every WebGPU implementation: the
    output is bound with its guard region, so a write just past the end lands there (in the browser too: past the
    binding, Chromium's robustness transform would clamp it onto the binding's last element instead)."""
    specs = make_specs(**{GELU: GELU, FASTGELU: FASTGELU})
    # Gelu: a WGSL type error in the vec4 code only
    edit(
        specs / GELU / TEMPLATE,
        "fn load4(i: u32) -> vec4<f32> {\n",
        "fn load4(i: u32) -> vec4<f32> {\n  let broken: u32 = 1.5;\n",
    )
    # FastGelu: the tail of vec4_tail_no_bias also writes one element past the end of y (a runtime-sized array)
    edit(
        specs / FASTGELU / TEMPLATE,
        "      y[e] = {{ scalar }}(gelu1(f32(x[e])));\n",
        "      y[e] = {{ scalar }}(gelu1(f32(x[e])));\n      y[params.count] = {{ scalar }}(12345.0);\n",
    )
    # Gelu: the scalar variant never writes its last element, which keeps the buffer's initial zero
    edit(
        specs / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count) { return; }\n{% if not vec4 %}  if (i + 1u == params.count) { return; }\n{% endif %}",
    )
    report = tmp_path / "report.json"
    proc = run_conformance(
        specs,
        "-k",
        "f32 and (X[8] or X[5] or X[7]) and not reject",
        f"--conformance-report={report}",
        f"--webgpu={webgpu}",
    )
    cases, out = _report(tmp_path, proc)
    assert "Traceback" not in out, out[-3000:]
    statuses = _statuses(cases)
    compile_failed = {i for i, c in cases.items() if "WGSL compilation failed" in c["detail"]}
    assert compile_failed and all(i.startswith("Gelu/") and "vec4" in i for i in compile_failed), statuses
    assert any("let broken: u32 = 1.5" in cases[i]["detail"] for i in compile_failed)  # the offending line
    oob = {i: c for i, c in cases.items() if i.startswith("FastGelu/") and "/vec4_tail_no_bias" in i}
    unwritten = {i: c for i, c in cases.items() if i.startswith("Gelu/") and "/scalar" in i}
    assert oob and unwritten, statuses
    for case in {**oob, **unwritten}.values():
        assert case["status"] == "failed", case
    assert all("wrote past the end of the output" in c["detail"] for c in oob.values()), oob
    assert all("differs from the reference" in c["detail"] for c in unwritten.values())
    others = [s for i, s in statuses.items() if i.startswith("FastGelu/") and i not in oob]
    assert others and all(s == "passed" for s in others), statuses


SPIN = """  if (params.count == 4097u) {  // HANG_CASE: every thread spins 65535 rounds (lavapipe's cap per loop)
    var acc = i;
    for (var b = 0u; b < 65535u; b++) { acc = acc ^ (acc << 13u); acc = acc ^ (acc >> 17u); acc = acc ^ (acc << 5u); }
    if (acc == 7u) { return; }  // keeps the loop alive (a compiler drops a loop whose result is unused)
  }
"""


def _hanging_gelu(specs, factor: int):
    """HANG_CASE (4097 elements, baseline profile) dispatches ``factor`` x 4097 spinning threads (about 0.15 s of
    lavapipe per unit of ``factor`` on a 2-core machine; :func:`_factor_lasting` measures it)."""
    edit(
        specs / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n{% if hasBias %}",
        SPIN + "  if (i >= params.count) { return; }\n{% if hasBias %}",
    )
    manifest = specs / GELU / "manifest.json"
    raw = json.loads(manifest.read_text())
    scalar = next(v for v in raw["variants"] if v["id"] == "scalar")
    scalar["passes"][0]["dispatch"]["threads"] = (
        f"numel(shapes.X) * {factor} if numel(shapes.X) == 4097 and "
        f"device.limits.maxComputeWorkgroupsPerDimension > 4 else numel(shapes.X)"
    )
    manifest.write_text(json.dumps(raw))


def _factor_lasting(tmp_path, specs, seconds: float) -> int:
    """The ``factor`` whose hang lasts about ``seconds`` here and now: one unit of spinning is timed on a copy of
    the planted package (the second of two runs, after compiling), so the hang scales with this machine."""
    calibration = tmp_path / "calibration"
    shutil.copytree(specs / GELU, calibration / GELU)
    _hanging_gelu(calibration, 1)
    kernel = load_kernel(calibration / GELU, device=get_device("vulkan"))
    x = np.ones(4097, np.float32)
    kernel(X=x)
    start = time.perf_counter()
    kernel(X=x)
    return max(4, math.ceil(seconds / (time.perf_counter() - start)))


def _run_hang(tmp_path, specs, recovery_s, timeout=600):
    report = tmp_path / "report.json"
    proc = run_conformance(
        specs,
        "-k",
        SELECT,
        f"--conformance-report={report}",
        timeout=timeout,
        env={
            "CONFORMANCE_DISPATCH_TIMEOUT": str(DISPATCH_LIMIT_S),
            "CONFORMANCE_DEVICE_RECOVERY_TIMEOUT": str(recovery_s),
        },
    )
    cases, out = _report(tmp_path, proc)
    assert len(cases) == 8, _statuses(cases)
    assert HANG_CASE in cases, _statuses(cases)
    detail = cases[HANG_CASE]["detail"]
    assert cases[HANG_CASE]["status"] == "failed", _statuses(cases)
    assert "timeout" in detail and f"{DISPATCH_LIMIT_S} s" in detail and "CONFORMANCE_DISPATCH_TIMEOUT" in detail, (
        detail[:600]
    )
    return cases, out


def test_a_dispatch_past_the_time_limit_fails_its_case_and_the_next_gets_a_fresh_device(tmp_path, make_specs):
    """Work lasting DRAIN_MULTIPLE times the limit: the case fails with a timeout; the next case waits for the
    abandoned work to drain (the recovery wait is far longer), opens a fresh device and passes, as do the others."""
    specs = make_specs(**{GELU: GELU})
    _hanging_gelu(specs, _factor_lasting(tmp_path, specs, DRAIN_MULTIPLE * DISPATCH_LIMIT_S))
    cases, out = _run_hang(tmp_path, specs, recovery_s=100 * DRAIN_MULTIPLE * DISPATCH_LIMIT_S)
    statuses = _statuses(cases)
    assert all(s == "passed" for i, s in statuses.items() if i != HANG_CASE), statuses
    assert "Traceback" not in out


def test_a_dispatch_that_never_ends_fails_its_case_and_the_run_still_finishes(tmp_path, make_specs):
    """About a day of work: the case fails with a timeout; once the recovery wait (2 s) is spent, every later
    case fails at once with a clear 'no fresh device' message; the run finishes, reports, and the process exits."""
    specs = make_specs(**{GELU: GELU})
    _hanging_gelu(specs, FOREVER)
    cases, out = _run_hang(tmp_path, specs, recovery_s=2)
    assert all(cases[i]["status"] == "passed" for i in BEFORE_HANG), _statuses(cases)
    after = sorted(set(cases) - BEFORE_HANG - {HANG_CASE})
    assert after, _statuses(cases)
    assert out.count("no fresh device: pass Gelu.scalar of com.microsoft.Gelu (variant scalar) timed out") >= len(
        after
    ), out[-3000:]
    assert "Traceback" not in out and "DeviceError" not in out, out[-3000:]
    for case_id in after:
        assert cases[case_id]["status"] == "failed", _statuses(cases)
        assert "no fresh device" in cases[case_id]["detail"] and "timed out" in cases[case_id]["detail"], cases[
            case_id
        ]["detail"][:600]


DESTROY_PLUGIN = textwrap.dedent("""
    import os
    def pytest_runtest_setup(item):
        if item.nodeid.endswith("[" + os.environ["DESTROY_BEFORE"] + "]"):
            from conformance.gpu.device import get_device
            get_device("vulkan").device.destroy()   # the shared device, behind the suite's back
""")


def test_a_device_destroyed_mid_run_fails_one_case_and_the_next_gets_a_fresh_device(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "destroy_device.py").write_text(DESTROY_PLUGIN)
    victim = "Gelu/f32/X[1024]/vec4@small-storage"
    report = tmp_path / "report.json"
    proc = run_conformance(
        specs,
        "-k",
        SELECT,
        f"--conformance-report={report}",
        "-p",
        "destroy_device",
        env={"DESTROY_BEFORE": victim, "PYTHONPATH": f"{ROOT}:{tmp_path / 'plugins'}"},
    )
    cases, out = _report(tmp_path, proc)
    statuses = _statuses(cases)
    assert len(statuses) == 8, statuses
    assert statuses[victim] == "failed", statuses
    assert "device-lost" in cases[victim]["detail"], cases[victim]["detail"][:600]
    assert all(s == "passed" for i, s in statuses.items() if i != victim), statuses


@pytest.mark.parametrize("webgpu", ["chromium", "firefox"])
def test_a_hung_page_is_a_failed_case_and_the_next_gets_a_fresh_page(tmp_path, make_specs, webgpu):
    """In the browser a shader that does not end stalls the page (SwiftShader has no watchdog): past
    CONFORMANCE_BROWSER_TIMEOUT the page counts as lost, its GPU process is killed (Chromium) or the browser
    started again (Firefox), the case fails, and the next case runs on a fresh page.  The shader spins for about a
    day, so no machine finishes it within the limit."""
    specs = make_specs(**{GELU: GELU})
    _hanging_gelu(specs, FOREVER)
    report = tmp_path / "report.json"
    proc = run_conformance(
        specs,
        "-k",
        SELECT,
        f"--conformance-report={report}",
        f"--webgpu={webgpu}",
        env={"CONFORMANCE_BROWSER_TIMEOUT": "8", "CONFORMANCE_DISPATCH_TIMEOUT": "600"},
        timeout=600,
    )
    cases, out = _report(tmp_path, proc)
    statuses = _statuses(cases)
    assert len(statuses) == 8 and statuses[HANG_CASE] == "failed", statuses
    assert "device lost" in cases[HANG_CASE]["detail"] and "did not answer within 8 s" in cases[HANG_CASE]["detail"]
    assert all(s == "passed" for i, s in statuses.items() if i != HANG_CASE), statuses
    assert "Traceback" not in out, out[-3000:]
