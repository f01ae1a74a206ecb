"""The row tolerances (reference/README.md, "Row reductions"), checked on simulated f32 kernels.

The simulations follow the kernel model the tolerance is derived for: f32 arithmetic where every
operation rounds *in one direction* (all up or all down: the worst WGSL allows, since it lets each
correctly rounded operation round either way, so errors add up instead of cancelling), row sums by a
pairwise tree, inverseSqrt pushed by its 2 ULP, exp by its 3 + 2|x| ULP. A two-pass LayerNorm must
pass everywhere up to |mean|/sigma = 1e4; a one-pass E[x^2] - mean^2 one must fail from 100 on.
"""

from __future__ import annotations

import numpy as np
import pytest

from reference import ElementTolerance, compare, reference_for
from reference.rowwise import depth

from .conftest import rows_with_ratio

F = np.float32
LN, SM, ADD = (
    reference_for("com.microsoft", "LayerNormalization"),
    reference_for("com.microsoft", "Softmax"),
    reference_for("ai.onnx", "Add"),
)


def rounded(v, direction: int) -> np.ndarray:
    """float64 values to f32, rounded to nearest (0), up (+1) or down (-1)."""
    v = np.asarray(v, dtype=np.float64)
    r = v.astype(F)
    if direction:
        off = (r.astype(np.float64) - v) * direction < 0
        r = np.where(off, np.nextafter(r, F(direction * np.inf)), r)
    return r


def push(r, ulps, direction: int) -> np.ndarray:
    """f32 results moved by `ulps` ULPs in `direction` (an op's allowed error beyond rounding)."""
    if not direction:
        return r
    return (r.astype(np.float64) + direction * np.floor(ulps) * np.spacing(np.abs(r)).astype(np.float64)).astype(F)


def tree_sum(a, direction: int) -> np.ndarray:
    """Pairwise sum over the last axis, each addition rounded in `direction` (zeros pad to a power of two)."""
    a = np.asarray(a, dtype=F)
    n = a.shape[-1]
    width = 1 << max(0, (n - 1).bit_length())
    a = np.concatenate([a, np.zeros(a.shape[:-1] + (width - n,), F)], axis=-1)
    while a.shape[-1] > 1:
        half = a.shape[-1] // 2
        a = rounded(a[..., :half].astype(np.float64) + a[..., half:], direction)
    return a


def sim_layernorm(x, g, b, eps, direction, one_pass=False):
    R = lambda v: rounded(v, direction)  # noqa: E731
    x = x.astype(F)
    inv = F(1.0 / x.shape[-1])
    mean = R(tree_sum(x, direction).astype(np.float64) * inv)
    d = R(x.astype(np.float64) - mean)
    if one_pass:
        q = tree_sum(R(x.astype(np.float64) * x), direction)
        var = np.maximum(R(R(q.astype(np.float64) * inv) - R(mean.astype(np.float64) * mean)), F(0))
    else:
        var = R(tree_sum(R(d.astype(np.float64) * d), direction).astype(np.float64) * inv)
    rstd = push(R(1.0 / np.sqrt(R(var.astype(np.float64) + F(eps)).astype(np.float64))), 2, direction)
    z = R(R(d.astype(np.float64) * rstd).astype(np.float64) * g.astype(F))
    return R(z.astype(np.float64) + b.astype(F))


def sim_softmax(x, direction):
    R = lambda v: rounded(v, direction)  # noqa: E731
    x = x.astype(F)
    d = R(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    e = push(R(np.exp(d.astype(np.float64))), 3 + 2 * np.abs(d.astype(np.float64)), direction)
    inv = push(R(1.0 / tree_sum(e, direction).astype(np.float64)), 2, direction)
    return R(e.astype(np.float64) * inv)


def worst(ref, y, inputs, attributes=None):
    expected = ref.compute(inputs, attributes)["Y"]
    result = compare(y, expected, ref.tolerance(str(y.dtype), inputs, attributes))
    return result.worst_ratio


# -- the depth and the tolerance object ------------------------------------------------------------------------
def test_depth_of_row_sums():
    assert [depth(n) for n in (0, 1, 2, 3, 4, 1024, 1025, 4096)] == [4, 4, 6, 8, 8, 24, 26, 28]


def test_element_tolerance_checks_and_broadcasts():
    t = ElementTolerance(2.0, 0.5, "why", "float32", element_atol=np.array([[1.0], [2.0]]))
    np.testing.assert_array_equal(t.allowed(np.array([[2.0, -4.0], [0.0, 2.0]])), [[2.0, 3.0], [2.0, 3.0]])
    for bad in (np.array([-1.0]), np.array([np.nan])):
        with pytest.raises(ValueError):
            ElementTolerance(1.0, 0.0, "why", "float32", element_atol=bad)
    with pytest.raises(ValueError):
        ElementTolerance(1.0, 0.0, "why", "float32")


def test_row_tolerances_need_the_inputs_others_ignore_them():
    for ref in (LN, SM):
        with pytest.raises(ValueError, match="pass the inputs"):
            ref.tolerance("float32")
    assert ADD.tolerance("float16", {"A": np.zeros(2, np.float16)}) == ADD.tolerance("float16")
    assert reference_for("com.microsoft", "Gelu").tolerance("float32", {"X": np.zeros(3, F)}).rtol > 0


def test_layer_norm_allowance_grows_with_the_mean_over_sigma_and_the_row_length():
    rng = np.random.default_rng(0)

    def allowed_at_zero(ratio, n):
        x = rows_with_ratio(rng, 1, n, ratio)
        x64 = x.astype(np.float64)
        inputs = {"X": x, "scale": np.ones(n, F)}
        t = LN.tolerance("float32", inputs)
        z = (x64 - x64.mean()) / x64.std()
        return float(t.element_atol.ravel()[np.argmin(np.abs(z))])  # the element nearest the mean: shift only

    a = [allowed_at_zero(r, 1024) for r in (1e2, 1e3, 1e4)]
    assert 9 < a[1] / a[0] < 11 and 9 < a[2] / a[1] < 11  # linear in |mean| / sigma
    short, long = allowed_at_zero(1e3, 16), allowed_at_zero(1e3, 4096)
    assert long / short == pytest.approx((depth(4096) + 3) / (depth(16) + 3), rel=0.05)


def test_f16_tolerances_add_one_f16_rounding():
    x = np.random.default_rng(1).normal(size=(2, 8)).astype(np.float16)
    for ref, inputs in ((LN, {"X": x, "scale": np.ones(8, np.float16)}), (SM, {"X": x})):
        t16, t32 = ref.tolerance("float16", inputs), ref.tolerance("float32", inputs)
        assert t16.rtol == 2.0**-10 and t32.rtol == 0.0
        np.testing.assert_allclose(t16.element_atol - t32.element_atol, 2.0**-14 - 2.0**-126)


# -- simulated kernels --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("direction", [0, 1, -1])
@pytest.mark.parametrize("n", [1, 7, 64, 1000, 4096])
def test_two_pass_layer_norm_passes_up_to_a_mean_of_1e4_sigma(n, direction):
    rng = np.random.default_rng(n)
    for ratio in (0, 1, 10, 100, 1e3, 1e4):
        x = rows_with_ratio(rng, 8, n, ratio)
        g, b = rng.normal(1, 0.5, n).astype(F), rng.normal(0, 1, n).astype(F)
        inputs = {"X": x, "scale": g, "bias": b}
        y = sim_layernorm(x, g, b, 1e-5, direction)
        assert worst(LN, y, inputs) < 1.0, (n, ratio, direction)


@pytest.mark.parametrize("direction", [0, 1, -1])
@pytest.mark.parametrize("n", [16, 64, 1000, 4096])
def test_one_pass_layer_norm_fails_from_a_mean_of_100_sigma(n, direction):
    rng = np.random.default_rng(n + 7)
    for ratio in (100, 1e3, 1e4):
        x = rows_with_ratio(rng, 8, n, ratio)
        g, b = np.ones(n, F), np.zeros(n, F)
        y = sim_layernorm(x, g, b, 1e-5, direction, one_pass=True)
        assert worst(LN, y, {"X": x, "scale": g, "bias": b}) > 1.0, (n, ratio, direction)


def test_two_pass_layer_norm_with_epsilon_dominating_and_constant_rows():
    rng = np.random.default_rng(5)
    x = np.concatenate([np.full((2, 33), 1000.0), rng.normal(0, 1e-4, (2, 33))]).astype(F)
    g, b = np.ones(33, F), np.zeros(33, F)
    for direction in (0, 1, -1):
        for eps in (1e-5, 1e-2, 1e-30):
            y = sim_layernorm(x, g, b, eps, direction)
            assert worst(LN, y, {"X": x, "scale": g, "bias": b}, {"epsilon": eps}) < 1.0, (direction, eps)


@pytest.mark.parametrize("direction", [0, 1, -1])
def test_softmax_simulation_passes_and_a_wrong_sum_fails(direction):
    rng = np.random.default_rng(9)
    for n, scale in ((1, 1), (5, 1), (64, 10), (1000, 30), (4096, 100)):
        x = rng.normal(0, scale, (4, n)).astype(F)
        assert worst(SM, sim_softmax(x, direction), {"X": x}) < 1.0, (n, scale)
    x = rng.normal(0, 1, (4, 100)).astype(F)
    y = sim_softmax(x, direction)
    assert worst(SM, (y * F(1 + 1e-5)).astype(F), {"X": x}) > 1.0  # a sum off by 1e-5 relative is caught
