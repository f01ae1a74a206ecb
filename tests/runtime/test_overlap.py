"""A verified run submits its production and guarded runs together where both fit, so the device is waited on
once per case (a browser resolves read-backs on a timer tick); larger runs keep one run's buffers at a time.
Either way the checks are the same: the guard, the inputs and bit-identical outputs. (These kernels use their
outputs only in plain stores, so they run once; the two-run path is forced here by treating them as kernels that
could tell the bindings apart.)"""

from __future__ import annotations

import numpy as np
import pytest

from conformance.gpu import runtime


@pytest.fixture(autouse=True)
def _compared(monkeypatch):
    monkeypatch.setattr(runtime, "stores_only", lambda wgsl, bindings: False)


@pytest.mark.parametrize("overlap_bytes, submissions", [(runtime.OVERLAP_BYTES, 1), (0, 2)])
def test_a_verified_run_waits_once_where_both_runs_fit(monkeypatch, device, fast_gelu, overlap_bytes, submissions):
    monkeypatch.setattr(runtime, "OVERLAP_BYTES", overlap_bytes)
    x = np.linspace(-3, 3, 40, dtype=np.float32).reshape(5, 8)
    bias = np.linspace(-1, 1, 8, dtype=np.float32)
    before = device.submissions
    _, run = fast_gelu.run(verify=True, X=x, bias=bias)
    assert device.submissions - before == submissions and run.runs == 2
    assert run.identical == {"Y": True} and run.guards_intact == {"Y": True}
    assert run.inputs_intact == {"X": True, "bias": True}
    _, plain = fast_gelu.run(X=x, bias=bias)
    np.testing.assert_array_equal(run.outputs["Y"], plain.outputs["Y"])


def test_a_run_too_large_to_overlap_is_run_twice(device, fast_gelu):
    big = np.zeros(runtime.OVERLAP_BYTES // 8, dtype=np.float32)  # with its output and read-back: over half
    before = device.submissions
    _, run = fast_gelu.run(verify=True, X=big)
    assert device.submissions - before == 2 and run.identical == {"Y": True}
