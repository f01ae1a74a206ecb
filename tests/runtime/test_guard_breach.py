"""A write past an output names the first offending element and its distance past the end, not only "guard
overwritten"."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from conformance import load_kernel
from conformance.certify.checker import _breach
from conformance.certify.implementations import ImplResult
from conformance.gpu import runtime
from conformance.gpu.device import get_device
from tests.hostile.conftest import ROOT, TEMPLATE, edit

FASTGELU = "com.microsoft.FastGelu"


# 12345.0f is the bytes 00 e4 40 46: against a guard word whose first byte is 00 as well, the first byte that
# differs is the element's second, and the breach is still located at the element (1 run in 256 before).
@pytest.mark.parametrize("sentinel", [None, bytes([0x00, 0x11, 0x22, 0x33])], ids=["random-guard", "guard-00"])
def test_the_first_write_past_the_end_is_located(tmp_path, monkeypatch, sentinel):
    if sentinel is not None:
        monkeypatch.setattr(runtime, "draw_sentinel", lambda: sentinel)
    package = tmp_path / FASTGELU
    shutil.copytree(ROOT / "specs" / FASTGELU, package)
    # the scalar tail also writes 3 elements past the end of y
    edit(
        package / TEMPLATE,
        "      y[e] = {{ scalar }}(gelu1(f32(x[e])));\n",
        "      y[e] = {{ scalar }}(gelu1(f32(x[e])));\n      y[params.count + 2u] = {{ scalar }}(12345.0);\n",
    )
    kernel = load_kernel(str(package), device=get_device("vulkan"))
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    plan, run = kernel.run(verify=True, X=x)
    assert plan.variant == "vec4_tail_no_bias" and run.guards_intact == {"Y": False}
    assert run.guard_breach == {"Y": 8}  # element 9 = 7 + 2: bytes 8..11 after the end
    message = _breach(ImplResult(run.outputs, extra={"guard_breach": run.guard_breach}), "Y", ((7,), "float32"))
    assert (
        message == ": first at element 9 (flat index; the output has 7 elements, so 3 past its last one; "
        "byte 8 after its end)"
    )
    assert _breach(ImplResult(run.outputs), "Y", ((7,), "float32")) == " (guard overwritten)"
