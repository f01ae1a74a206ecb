"""A small verified run submits its guarded run before reading back the first (their read-backs share one round);
a large one runs them one after the other. Either way the outputs, the guards' and the comparison's verdicts are
the same."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from conformance import load_kernel
from conformance.gpu import runtime
from conformance.gpu.device import get_device
from conformance.gpu.runtime import Runtime
from tests.hostile.conftest import ROOT, TEMPLATE, edit

FASTGELU = "com.microsoft.FastGelu"


@pytest.fixture
def order(monkeypatch):
    """The runtime's submissions and read-backs, in the order they happen: ("submit" | "collect", guarded?)."""
    seen = []
    submit, collect = Runtime._submit, Runtime._collect

    def spy_submit(self, plan, inputs, result, *, guard):
        seen.append(("submit", guard))
        return submit(self, plan, inputs, result, guard=guard)

    def spy_collect(self, plan, inputs, result, bound, readback, inputs_back, *, guard):
        seen.append(("collect", guard))
        return collect(self, plan, inputs, result, bound, readback, inputs_back, guard=guard)

    monkeypatch.setattr(Runtime, "_submit", spy_submit)
    monkeypatch.setattr(Runtime, "_collect", spy_collect)
    return seen


@pytest.mark.parametrize("limit, expected", [
    (runtime.OVERLAP_MAX_BYTES, [("submit", False), ("submit", True), ("collect", False), ("collect", True)]),
    (0, [("submit", False), ("collect", False), ("submit", True), ("collect", True)]),
])
def test_the_guarded_run_is_submitted_before_the_first_read_back_only_when_small(monkeypatch, order, limit,
                                                                                  expected):
    monkeypatch.setattr(runtime, "OVERLAP_MAX_BYTES", limit)
    kernel = load_kernel(FASTGELU, device=get_device("vulkan"), version=1)
    x = np.linspace(-4, 4, 4099, dtype=np.float32)
    _, run = kernel.run(verify=True, X=x)
    assert order == expected
    assert run.identical == {"Y": True} and run.guards_intact == {"Y": True} and run.inputs_intact == {"X": True}
    order.clear()
    _, plain = kernel.run(X=x)
    assert order == [("submit", False), ("collect", False)]   # an unverified run has no guarded run
    np.testing.assert_array_equal(plain.outputs["Y"], run.outputs["Y"])


@pytest.mark.parametrize("limit", [runtime.OVERLAP_MAX_BYTES, 0])
def test_a_write_past_the_end_is_caught_whether_or_not_the_runs_overlap(monkeypatch, tmp_path, limit):
    monkeypatch.setattr(runtime, "OVERLAP_MAX_BYTES", limit)
    package = tmp_path / FASTGELU
    shutil.copytree(ROOT / "specs" / FASTGELU, package)
    edit(package / TEMPLATE, "      y[e] = {{ scalar }}(gelu1(f32(x[e])));\n",
         "      y[e] = {{ scalar }}(gelu1(f32(x[e])));\n      y[params.count + 2u] = {{ scalar }}(12345.0);\n")
    kernel = load_kernel(str(package), device=get_device("vulkan"))
    _, run = kernel.run(verify=True, X=np.linspace(-1, 1, 7, dtype=np.float32))
    assert run.guards_intact == {"Y": False} and run.guard_breach == {"Y": 8}
