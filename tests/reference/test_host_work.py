"""The host work of a value check made once and only where needed: the reported worst elements found by a partition
(the same ones, in the same order, as sorting every element), and a row op's reference made once for the compute and
the tolerance of the same inputs, never for other bits."""

from __future__ import annotations

import numpy as np
import pytest

from reference.compare import _largest
from reference.layernorm import LayerNormReference


@pytest.mark.parametrize("seed", range(40))
def test_the_largest_are_those_a_stable_sort_puts_first(seed):
    rng = np.random.default_rng(seed)
    flat = rng.choice([0.0, -0.0, 1.0, 2.0, -1.0, np.inf, 0.5], size=int(rng.integers(1, 80)))
    if seed % 2:
        flat = rng.normal(size=flat.size).round(1)  # ties at random places
    for k in range(0, 9):
        assert np.array_equal(_largest(flat, k), np.argsort(-flat, kind="stable")[:k])


def _inputs(rng, rows=64, n=3):
    return {"X": rng.normal(size=(rows, n)).astype(np.float16), "scale": np.ones(n, np.float16), "bias": None}


def test_compute_and_tolerance_of_the_same_inputs_share_one_analysis(monkeypatch):
    ref, calls = LayerNormReference(), []
    real = ref._analyse
    monkeypatch.setattr(ref, "_analyse", lambda *a: calls.append(1) or real(*a))
    inputs = _inputs(np.random.default_rng(0))
    y = ref.compute(inputs)["Y"]
    tol = ref.tolerance("float16", inputs)
    assert len(calls) == 1 and tol.element_atol.shape == y.shape
    with pytest.raises(ValueError):
        y[0, 0] = 1.0  # handed out twice: read-only
    changed = {**inputs, "X": inputs["X"].copy()}
    changed["X"].view(np.uint16)[0, 0] ^= 1  # one bit of one element
    ref.compute(changed)
    ref.compute({**inputs, "X": inputs["X"].copy()}, {"epsilon": 1e-3})  # other attributes
    ref.tolerance("float32", inputs)  # another output dtype
    assert len(calls) == 4
    ref.compute(inputs)
    ref.compute(inputs)
    assert len(calls) == 5
    inputs["X"][1, 1] = 7.0  # the same array, changed in place: not the bits the answer was made from
    ref.compute(inputs)
    assert len(calls) == 6


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("block", [1, 7, 64])
def test_a_comparison_by_blocks_is_the_whole_comparison(monkeypatch, seed, block):
    """Every field of the comparison (worst elements and their order, counts, the profile over the output, a
    failure's pictures) is the same whether the output is taken in blocks or at once."""
    from importlib import import_module

    from reference.rowwise import ElementTolerance
    from reference.tolerance import Tolerance

    module = import_module("reference.compare")
    rng = np.random.default_rng(seed)
    shape = [(5, 40), (333,), (2, 3, 17), (1,)][seed % 4]
    expected = rng.normal(size=shape)
    expected[rng.random(shape) < 0.1] = np.nan  # unconstrained elements
    actual = (expected + rng.choice([0.0, 1e-4, 2e-3, 1e-3], size=shape)).astype(np.float32)
    actual[rng.random(shape) < 0.05 * (seed % 3)] = np.inf  # failures, from none to some
    tolerance = (
        Tolerance(1e-3, 1e-3, "test", "float32")
        if seed % 2
        else ElementTolerance(1e-3, 0.0, "test", "float32", element_atol=rng.choice([0.0, 1e-3, 2e-3], size=shape))
    )
    inputs = rng.normal(size=shape).astype(np.float32)
    monkeypatch.setattr(module, "COMPARE_BLOCK", 1 << 30)
    whole = module.compare(actual, expected, tolerance, inputs=inputs)
    monkeypatch.setattr(module, "COMPARE_BLOCK", block)
    blocks = module.compare(actual, expected, tolerance, inputs=inputs)
    assert repr(blocks) == repr(whole)
