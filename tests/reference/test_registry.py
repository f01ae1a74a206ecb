"""Registry lookup, input validation and the non-finite policy."""

from __future__ import annotations

import numpy as np
import pytest

import reference
from reference import ReferenceNotFound, compare, gelu_erf, gelu_tanh, reference_for

FAST, GELU = reference_for("com.microsoft", "FastGelu"), reference_for("com.microsoft", "Gelu")


def test_exports():
    for name in ("reference_for", "ReferenceNotFound", "compare", "Comparison", "Tolerance", "gelu_erf", "gelu_tanh"):
        assert hasattr(reference, name)


def test_lookup():
    assert FAST.op == "com.microsoft.FastGelu" and GELU.op == "com.microsoft.Gelu"


def test_unknown_op_is_a_clear_lookup_error():
    with pytest.raises(LookupError) as info:
        reference_for("com.microsoft", "BiasGelu")
    assert isinstance(info.value, ReferenceNotFound)
    msg = str(info.value)
    assert "com.microsoft.BiasGelu" in msg and "com.microsoft.FastGelu" in msg and "com.microsoft.Gelu" in msg


def test_compute_uses_dtype_rounded_inputs_and_bias_on_last_axis():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1.5
    bias = np.array([0.1, -0.2, 0.3, -0.4], dtype=np.float32)
    y = FAST.compute({"X": x, "bias": bias})["Y"]
    assert y.dtype == np.float64 and y.shape == x.shape
    expected = gelu_tanh(x.astype(np.float64) + bias.astype(np.float64))  # not float32(0.1), not 0.1
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(FAST.compute({"X": x, "bias": None})["Y"], gelu_tanh(x))
    np.testing.assert_array_equal(GELU.compute({"X": x.astype(np.float16)})["Y"], gelu_erf(x.astype(np.float16)))


def test_gelu_accepts_rank_0_fastgelu_does_not():
    assert GELU.compute({"X": np.float32(1.0)})["Y"].shape == ()
    with pytest.raises(ValueError, match="rank >= 1"):
        FAST.compute({"X": np.float32(1.0)})


@pytest.mark.parametrize(
    "inputs, match",
    [
        ({"X": np.zeros((2, 4), np.float32), "bias": np.zeros(3, np.float32)}, "length X.shape\\[-1\\]"),
        ({"X": np.zeros((2, 4), np.float32), "bias": np.zeros((1, 4), np.float32)}, "1-D"),
        ({"X": np.zeros((2, 4), np.float32), "bias": np.zeros(4, np.float16)}, "dtype"),
        ({"X": np.zeros((2, 4), np.int32)}, "floating-point"),
        ({"bias": np.zeros(4, np.float32)}, "'X' is required"),
        ({"X": np.zeros(4, np.float32), "scale": np.zeros(4, np.float32)}, "unexpected input"),
    ],
)
def test_fastgelu_validation(inputs, match):
    with pytest.raises(ValueError, match=match):
        FAST.compute(inputs)


def test_gelu_rejects_bias():
    with pytest.raises(ValueError, match="unexpected input"):
        GELU.compute({"X": np.zeros(4, np.float32), "bias": np.zeros(4, np.float32)})


def test_non_finite_or_overflowing_sums_are_unconstrained():
    x = np.array([[np.nan, 1.0, np.inf, 3e38], [-np.inf, -1.0, 2.0, 60000.0]], dtype=np.float32)
    bias = np.array([0.0, 0.0, 0.0, 3e38], dtype=np.float32)  # 3e38 + 3e38 overflows f32
    y = FAST.compute({"X": x, "bias": bias})["Y"]
    np.testing.assert_array_equal(np.isnan(y), [[True, False, True, True], [True, False, False, False]])
    x16 = np.array([[-np.inf, -1.0, 2.0, 60000.0]], np.float16)
    y16 = FAST.compute({"X": x16, "bias": np.array([0, 0, 0, 6e4], np.float16)})["Y"]
    assert np.isnan(y16[0, 3]) and np.isnan(y16[0, 0])  # 60000 + 60000 > 65504


def test_compare_ignores_unconstrained_positions_but_checks_the_rest(sim):
    x = np.array([np.nan, np.inf, -np.inf, -1.0, 0.5, 2.0], dtype=np.float32)
    expected = GELU.compute({"X": x})["Y"]
    good = sim.gelu_erf_f32(np.nan_to_num(x)).copy()
    good[:3] = [123.0, np.nan, -np.inf]  # anything is accepted where the input is non-finite
    result = compare(good, expected, GELU.tolerance("float32"))
    assert result.passed and result.checked == 3 and result.unconstrained == 3
    bad = good.copy()
    bad[4] += 1e-3
    result = compare(bad, expected, GELU.tolerance("float32"), inputs=x)
    assert not result.passed and result.mismatches == 1 and result.worst[0].index == (4,)
