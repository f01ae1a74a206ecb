"""Accuracy of the float64 references against closed forms and identities."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import erfc

from reference import gelu_erf, gelu_tanh
from reference.gelu import SQRT_2_OVER_PI, TANH_CUBIC

HUGE = np.array([65504.0, -65504.0, 3.4028234663852886e38, -3.4028234663852886e38, 1e300, -1e300, -1.7e308])


def test_constants_are_exact():
    assert SQRT_2_OVER_PI == math.sqrt(2 / math.pi)
    assert TANH_CUBIC == 0.044715


@pytest.mark.parametrize("x", [-10.0, -20.0, -5.0, -1.0, 0.5, 3.0])
def test_gelu_erf_matches_erfc_closed_form(x):
    # x * Phi(x) == x * 0.5 * erfc(-x / sqrt 2); erfc has no cancellation for x << 0
    assert gelu_erf(x) == pytest.approx(x * 0.5 * erfc(-x / math.sqrt(2)), rel=1e-14)


def test_gelu_erf_large_negative_is_not_cancelled():
    # the textbook 0.5*x*(1+erf(x/sqrt2)) gives exactly 0 here
    y = gelu_erf(-10.0)
    assert y < 0 and y == pytest.approx(-7.619853024160527e-23, rel=1e-12)


def test_gelu_tanh_matches_textbook_where_textbook_is_accurate():
    x = np.linspace(-3, 8, 1001)
    textbook = 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + TANH_CUBIC * x**3)))
    np.testing.assert_allclose(gelu_tanh(x), textbook, rtol=1e-12, atol=1e-15)


def test_gelu_tanh_large_negative_matches_logistic_closed_form():
    x = -6.0
    u = SQRT_2_OVER_PI * (x + TANH_CUBIC * x**3)
    assert gelu_tanh(x) == pytest.approx(x * math.exp(2 * u) / (1 + math.exp(2 * u)), rel=1e-14)


@pytest.mark.parametrize("gelu", [gelu_erf, gelu_tanh])
def test_odd_part_identity(gelu):
    # Phi(x) + Phi(-x) == 1 and sigmoid(v) + sigmoid(-v) == 1, so gelu(x) - gelu(-x) == x
    x = np.concatenate([np.linspace(-12, 12, 2001), np.logspace(-30, 30, 121)])
    np.testing.assert_allclose(gelu(x) - gelu(-x), x, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("gelu", [gelu_erf, gelu_tanh])
def test_huge_and_tiny_inputs_are_finite_and_warning_free(gelu):
    tiny = np.array([5e-324, -5e-324, 1e-45, -1.4e-45, 0.0, -0.0])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        y_huge, y_tiny = gelu(HUGE), gelu(tiny)
    assert np.all(np.isfinite(y_huge))
    np.testing.assert_array_equal(y_huge[HUGE > 0], HUGE[HUGE > 0])  # gelu(x) == x
    assert np.all(y_huge[HUGE < 0] == 0) and np.all(np.signbit(y_huge[HUGE < 0]))  # -0
    np.testing.assert_allclose(y_tiny, tiny / 2, rtol=1e-15, atol=0)


@pytest.mark.parametrize("gelu", [gelu_erf, gelu_tanh])
def test_non_finite_inputs_give_nan(gelu):
    with np.errstate(all="raise"):
        y = gelu(np.array([np.nan, np.inf, -np.inf, 1.0]))
    assert np.isnan(y[:3]).all() and np.isfinite(y[3])


def test_float16_and_float32_inputs_are_upcast_exactly():
    x16 = np.array([1.0009765625, -2.5], dtype=np.float16)  # 1 + 2**-10
    assert gelu_erf(x16).dtype == np.float64
    assert gelu_erf(x16)[0] == gelu_erf(1.0009765625)


def test_tanh_and_erf_gelu_differ_by_about_4_7e_4():
    x = np.linspace(-8, 8, 16001)
    assert np.abs(gelu_erf(x) - gelu_tanh(x)).max() == pytest.approx(4.73e-4, rel=1e-2)
