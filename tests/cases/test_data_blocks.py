"""Inputs drawn a block at a time (cases.data.DRAW_BLOCK) are the arrays one whole draw gave: the same generator
stream, cast the same way, whatever the block size, for every dtype an input can have."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from cases import data
from cases.data import Recipe, make_inputs


@pytest.mark.parametrize("dist", ["normal", "uniform"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int32"])
@pytest.mark.parametrize("block", [1, 7, 1000])
def test_blocks_give_the_whole_draw(monkeypatch, dist, dtype, block):
    shape = (13, 77)
    case = SimpleNamespace(
        id="t",
        package="ai.onnx.Add",
        data=Recipe(1234, dist, 2.5),
        inputs={"A": (shape, dtype), "B": None, "C": ((5,), dtype)},
    )
    monkeypatch.setattr(data, "DRAW_BLOCK", block)
    got = make_inputs(case)
    assert got["B"] is None
    for index, role in ((0, "A"), (2, "C")):
        size = math.prod(case.inputs[role][0])
        rng = np.random.default_rng([1234, index])
        whole = rng.standard_normal(size) * 2.5 if dist == "normal" else rng.uniform(-2.5, 2.5, size)
        want = whole.astype(dtype).reshape(case.inputs[role][0])
        assert got[role].dtype == want.dtype and np.array_equal(got[role].view(np.uint8), want.view(np.uint8))
