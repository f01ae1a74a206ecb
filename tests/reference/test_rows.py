"""reference.rows gives NumPy's own bits: on every row length it reduces column by column, on data with signed
zeros, infinities, NaN, subnormals and magnitudes far apart (where another order of additions would round
differently), and through NumPy on the longer rows."""

from __future__ import annotations

import numpy as np
import pytest

from reference.rows import SHORT_ROW, row_all, row_max, row_mean, row_sum


def _hostile(shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-60, 60, shape))  # sums that round differently by order
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -(2.0**-1022), 1e308, -1e308])
    pick = rng.random(shape) < 0.05
    x[pick] = rng.choice(specials, int(pick.sum()))
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


@pytest.mark.parametrize("n", range(1, SHORT_ROW + 2))
@pytest.mark.parametrize("lead", [(20000,), (7, 300)])
def test_the_same_bits_as_numpy(n, lead):
    x = _hostile(lead + (n,), seed=n)
    with np.errstate(all="ignore"):
        assert np.array_equal(_bits(row_sum(x)), _bits(x.sum(axis=-1, keepdims=True)))
        assert np.array_equal(_bits(row_mean(x)), _bits(x.mean(axis=-1, keepdims=True)))
        # a maximum is exact: only which zero or which NaN it keeps could differ
        assert np.array_equal(row_max(x), x.max(axis=-1, keepdims=True), equal_nan=True)
    finite = np.isfinite(x)
    assert np.array_equal(row_all(finite), finite.all(axis=-1, keepdims=True))


def test_a_single_row_and_an_empty_one_go_through_numpy():
    x = _hostile((5,), seed=1)
    with np.errstate(all="ignore"):
        assert np.array_equal(_bits(row_sum(x)), _bits(x.sum(axis=-1, keepdims=True)))
    empty = np.zeros((4, 0))
    assert row_sum(empty).shape == (4, 1) and not row_sum(empty).any()


def test_the_shipped_references_keep_their_bits_on_short_rows():
    """LayerNormalization and Softmax over rows of 3: the column path against NumPy's reductions, patched in."""
    from importlib import import_module

    from reference import rows

    layernorm, softmax = import_module("reference.layernorm"), import_module("reference.softmax")

    x = _hostile((4096, 3), seed=7)
    x[~np.isfinite(x) | (np.abs(x) > 1e30)] = 1.0
    x = x.astype(np.float32)
    scale = np.array([0.5, -2.0, 3.0], dtype=np.float32)

    def computed():
        ln = layernorm.LayerNormReference()._analyse(x, (scale, None, 1e-5), "float32")
        sm = softmax.SoftmaxReference()._analyse(x, None, "float32")
        return [a for result in (ln, sm) for a in result[:2]]

    fast = computed()
    numpy_only = pytest.MonkeyPatch()
    try:
        numpy_only.setattr(rows, "SHORT_ROW", 0)
        slow = computed()
    finally:
        numpy_only.undo()
    for a, b in zip(fast, slow):
        assert np.array_equal(_bits(a), _bits(b))
