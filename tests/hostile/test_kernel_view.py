"""A kernel cannot tell it is under test (issue 28, class 1): a conformance case's outputs are those of a run
bound exactly as ``load_kernel()`` binds, and the guarded run must give the same bytes; the guard's sentinel is
drawn per run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from conformance.gpu.runtime import Runtime
from tests.hostile.conftest import TEMPLATE, edit, run_cli, run_conformance

GELU = "com.microsoft.Gelu"
#: Computes only where y is longer than its output: when the suite binds it with its guard region.
ONLY_UNDER_TEST = (
    "  if (i >= params.count) { return; }\n",
    "  if (i >= params.count) { return; }\n  if (arrayLength(&y) <= params.count) { return; }\n",
)


def test_a_kernel_that_computes_only_when_its_guard_is_visible_fails(make_specs, device):
    specs = make_specs(**{GELU: GELU})
    edit(specs / GELU / TEMPLATE, *ONLY_UNDER_TEST)
    kernel = load_kernel(specs / GELU, device=device)
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    assert not kernel(X=x)["Y"].any()  # production: nothing written
    plan, run = kernel.run(BASELINE, verify=True, X=x)
    assert not run.outputs["Y"].any()  # the case checks what production returns
    assert run.identical == {"Y": False} and run.guards_intact == {"Y": True} and run.runs == 2  # arrayLength


@pytest.mark.parametrize("webgpu", ["wgpu", "dawn", "chromium"])
def test_every_webgpu_implementation_fails_such_a_kernel(tmp_path, make_specs, webgpu):
    """The runtime is shared through the one object model: the same two runs on Dawn and in the browser page."""
    specs = make_specs(**{GELU: GELU})
    edit(specs / GELU / TEMPLATE, *ONLY_UNDER_TEST)
    report = tmp_path / "report.json"
    proc = run_conformance(
        specs, "-k", "f32 and X[8] and not reject", f"--conformance-report={report}", f"--webgpu={webgpu}"
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    failed = [c for c in json.loads(report.read_text())["cases"] if c["status"] == "failed"]
    assert failed and all("behaves differently under test" in c["detail"] for c in failed), failed[:1]


def test_an_honest_kernel_gives_the_same_bytes_bound_either_way(device):
    kernel = load_kernel(GELU, device=device)
    x = np.linspace(-3, 3, 4097, dtype=np.float32)
    plan, run = kernel.run(BASELINE, verify=True, X=x)
    assert run.identical == {"Y": True} and run.guards_intact == {"Y": True}
    assert np.array_equal(run.outputs["Y"], kernel(X=x)["Y"])


def test_the_sentinel_is_drawn_per_run(device):
    kernel = load_kernel(GELU, device=device)
    x = np.ones(5, dtype=np.float32)
    runtime = Runtime(device, kernel.package)
    sentinels = set()
    for _ in range(3):
        bound = runtime.bind(kernel.plan(X=x), {"X": x}, guard=True)
        sentinels.add(bound.sentinel)
        bound.release()
    assert len(sentinels) == 3
    plain = runtime.bind(kernel.plan(X=x), {"X": x})
    assert plain.guarded == {"Y": 0} and plain.buffers["Y"].size == 20  # exactly what production allocates
    plain.release()


#: Reads its output's length behind a form feed, which ends the ``//`` comment for WGSL: zeros in production,
#: GELU under the guarded binding (issue 51, item 1).
FORM_FEED_COMMENT = (
    "  if (i >= params.count) { return; }\n",
    "  if (i >= params.count) { return; }\n  // note\f if (arrayLength(&y) < params.count + 16u) { return; }\n",
)


@pytest.mark.parametrize("webgpu", ["wgpu", "dawn"])
def test_code_behind_a_form_feed_in_a_comment_is_seen(tmp_path, make_specs, webgpu):
    """Through the documented command: the kernel returns zeros in production, so certify must not conform."""
    specs = make_specs(**{GELU: GELU})
    edit(specs / GELU / TEMPLATE, *FORM_FEED_COMMENT)
    report = tmp_path / "report.json"
    proc = run_cli(
        "-P",
        "-m",
        "conformance",
        "certify",
        "--specs",
        str(specs / GELU),
        "--device",
        "vulkan",
        "--webgpu",
        webgpu,
        "--report",
        str(report),
        "--case",
        "test_case[Gelu/f32/X[8]/vec4]",
        "--case",
        "test_case[Gelu/f32/X[7]/scalar]",
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    data = json.loads(report.read_text())
    assert data["result"] == "does-not-conform"
    failed = [c for c in data["cases"] if c["status"] == "failed"]
    assert len(failed) == 2 and all("behaves differently under test" in c["detail"] for c in failed), failed[:1]


def test_a_megabyte_of_comment_lines_is_read_outside_the_clock(tmp_path, make_specs):
    """A correct kernel whose template emits about 1 MiB (just under the render budget) of ``//`` lines: the stores-only decision is linear and
    made before the run's timer starts, so the kernel conforms (it timed out, and lost the device, when the
    decision was quadratic and timed)."""
    specs = make_specs(**{GELU: GELU})
    comments = '{{ "//\\n" * 340000 }}'
    edit(specs / GELU / TEMPLATE, FORM_FEED_COMMENT[0], comments + FORM_FEED_COMMENT[0])
    report = tmp_path / "report.json"
    proc = run_cli(
        "-P",
        "-m",
        "conformance",
        "certify",
        "--specs",
        str(specs / GELU),
        "--device",
        "vulkan",
        "--report",
        str(report),
        "--case",
        "test_case[Gelu/f32/X[8]/vec4]",
        "--case",
        "test_case[Gelu/f32/X[7]/scalar]",
    )
    data = json.loads(report.read_text())
    assert proc.returncode == 0 and data["totals"]["passed"] == 2, proc.stdout[-2000:]
