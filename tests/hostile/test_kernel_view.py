"""A kernel cannot tell it is under test (issue 28, class 1): a conformance case's outputs are those of a run
bound exactly as ``load_kernel()`` binds, and the guarded run must give the same bytes; the guard's sentinel is
drawn per run."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from conformance.gpu.runtime import Runtime
from tests.hostile.conftest import TEMPLATE, edit, run_conformance

GELU = "com.microsoft.Gelu"
#: Computes only where y is longer than its output: when the suite binds it with its guard region.
ONLY_UNDER_TEST = ("  if (i >= params.count) { return; }\n",
                   "  if (i >= params.count) { return; }\n  if (arrayLength(&y) <= params.count) { return; }\n")


def test_a_kernel_that_computes_only_when_its_guard_is_visible_fails(make_specs, device):
    specs = make_specs(**{GELU: GELU})
    edit(specs / GELU / TEMPLATE, *ONLY_UNDER_TEST)
    kernel = load_kernel(specs / GELU, device=device)
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    assert not kernel(X=x)["Y"].any()                      # production: nothing written
    plan, run = kernel.run(BASELINE, verify=True, X=x)
    assert not run.outputs["Y"].any()                      # the case checks what production returns
    assert run.identical == {"Y": False} and run.guards_intact == {"Y": True} and run.runs == 2   # arrayLength


@pytest.mark.parametrize("webgpu", ["wgpu", "dawn", "chromium"])
def test_every_webgpu_implementation_fails_such_a_kernel(tmp_path, make_specs, webgpu):
    """The runtime is shared through the one object model: the same two runs on Dawn and in the browser page."""
    specs = make_specs(**{GELU: GELU})
    edit(specs / GELU / TEMPLATE, *ONLY_UNDER_TEST)
    report = tmp_path / "report.json"
    proc = run_conformance(specs, "-k", "f32 and X[8] and not reject", f"--conformance-report={report}",
                           f"--webgpu={webgpu}")
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
    assert plain.guarded == {"Y": 0} and plain.buffers["Y"].size == 20     # exactly what production allocates
    plain.release()
