"""The float64 references of the row and broadcast ops: the math, input checks, the non-finite policy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import reference
from reference import add, layer_normalization, reference_for, softmax

from .conftest import ROOT

LN, SM, ADD = (
    reference_for("com.microsoft", "LayerNormalization"),
    reference_for("com.microsoft", "Softmax"),
    reference_for("ai.onnx", "Add"),
)


def test_registered_and_exported():
    assert {"com.microsoft.LayerNormalization", "com.microsoft.Softmax", "ai.onnx.Add"} <= set(reference.known_ops())
    for name in ("layer_normalization", "softmax", "add", "ElementTolerance"):
        assert hasattr(reference, name)


def test_reference_imports_nothing_of_the_suite():
    code = (
        "import sys, reference; bad = sorted(m for m in sys.modules if m.split('.')[0] in ('conformance', 'cases'));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# -- LayerNormalization --------------------------------------------------------------------------------------
def test_layer_norm_is_the_textbook_formula_over_the_last_axis():
    rng = np.random.default_rng(0)
    x = rng.normal(3, 2, (2, 3, 7))
    g, b = rng.normal(size=7), rng.normal(size=7)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)  # population variance
    np.testing.assert_allclose(
        layer_normalization(x, g, b, 1e-3), (x - mean) / np.sqrt(var + 1e-3) * g + b, rtol=1e-13, atol=1e-13
    )
    y = layer_normalization(x, np.ones(7), None, 0.0 + 1e-300)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-14)
    np.testing.assert_allclose(y.var(-1), 1, rtol=1e-13)


def test_layer_norm_keeps_its_accuracy_at_a_huge_mean():
    """A second pass refines the float64 mean: rows with |mean|/sigma = 1e12 still normalize to unit variance."""
    rng = np.random.default_rng(1)
    z = rng.standard_normal(4096)
    y = layer_normalization(1e12 + z, np.ones(4096), None, 1e-30)
    np.testing.assert_allclose(y.std(), 1, rtol=1e-3)


def test_layer_norm_constant_rows_and_epsilon():
    y = layer_normalization(np.full((2, 5), 7.0), np.ones(5), np.arange(5.0), 1e-5)
    np.testing.assert_array_equal(y, np.tile(np.arange(5.0), (2, 1)))  # zero deviations: y = bias
    x = np.array([[0.0, 2.0]])
    np.testing.assert_allclose(layer_normalization(x, np.ones(2), None, 3.0), [[-0.5, 0.5]])  # 1 / sqrt(1 + 3)


def test_layer_norm_reference_uses_the_dtype_rounded_inputs_and_attributes():
    x = (np.arange(12, dtype=np.float64).reshape(3, 4) / 3).astype(np.float16)
    g = np.full(4, 1.1, np.float16)
    got = LN.compute({"X": x, "scale": g}, {"epsilon": 0.5})["Y"]
    np.testing.assert_array_equal(got, layer_normalization(x.astype(np.float64), g.astype(np.float64), None, 0.5))
    assert LN.compute({"X": x, "scale": g})["Y"].dtype == np.float64


@pytest.mark.parametrize(
    "inputs, attributes, message",
    [
        ({"X": np.zeros((2, 4), np.float32)}, {}, "required"),
        (
            {"X": np.zeros((2, 4), np.float32), "scale": np.zeros(3, np.float32)},
            {},
            "scale must be float32 of shape (4,)",
        ),
        ({"X": np.zeros((2, 4), np.float32), "scale": np.zeros(4, np.float16)}, {}, "scale must be float32"),
        (
            {"X": np.zeros((2, 4), np.float32), "scale": np.zeros(4, np.float32), "bias": np.zeros((1, 4), np.float32)},
            {},
            "bias must be",
        ),
        ({"X": np.zeros((2, 4), np.float32), "scale": np.zeros(4, np.float32)}, {"axis": 0}, "only the last axis"),
        ({"X": np.zeros((2, 4), np.float32), "scale": np.zeros(4, np.float32)}, {"epsilon": 0.0}, "positive"),
        ({"X": np.zeros((), np.float32), "scale": np.zeros(4, np.float32)}, {}, "rank >= 1"),
        ({"X": np.zeros((2, 4), np.int32), "scale": np.zeros(4, np.int32)}, {}, "floating-point"),
        ({"X": np.zeros((2, 4), np.float32), "scale": np.zeros(4, np.float32), "B": np.zeros(4)}, {}, "unexpected"),
    ],
)
def test_layer_norm_input_checks(inputs, attributes, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LN.compute(inputs, attributes)


def test_layer_norm_non_finite_policy_is_per_row_and_per_column():
    x = np.random.default_rng(2).normal(size=(5, 6)).astype(np.float32)
    x[1, 2] = np.nan
    x[2, 0] = np.inf
    x[3, :] = 3e38  # the f32 sum of the row overflows: unconstrained
    g = np.ones(6, np.float32)
    b = np.zeros(6, np.float32)
    b[4] = np.inf
    y = LN.compute({"X": x, "scale": g, "bias": b})["Y"]
    assert np.isnan(y[1:4]).all() and np.isnan(y[:, 4]).all()
    assert np.isfinite(np.delete(y[[0, 4]], 4, axis=1)).all()


def test_layer_norm_f16_outputs_beyond_the_f16_range_are_unconstrained():
    x = np.array([[0.0, 1.0]], np.float16)
    y = LN.compute({"X": x, "scale": np.array([40000, 1], np.float16), "bias": np.array([40000, 0], np.float16)})["Y"]
    assert y[0, 0] == pytest.approx(0.8, rel=1e-3) and y[0, 1] == pytest.approx(1.0, rel=1e-4)  # -39999.2 + 40000
    y = LN.compute({"X": x, "scale": np.array([1, 40000], np.float16), "bias": np.array([0, 40000], np.float16)})["Y"]
    assert np.isnan(y[0, 1])  # ~80000 does not


def test_layer_norm_empty_tensors():
    for shape in ((0, 4), (3, 0), (0,)):
        x = np.zeros(shape, np.float32)
        assert LN.compute({"X": x, "scale": np.zeros(shape[-1:], np.float32)})["Y"].shape == shape


# -- Softmax ---------------------------------------------------------------------------------------------------
def test_softmax_rows_sum_to_one_and_ignore_shifts():
    x = np.random.default_rng(3).normal(0, 5, (3, 4, 9))
    y = softmax(x)
    np.testing.assert_allclose(y.sum(-1), 1, rtol=1e-14)
    np.testing.assert_allclose(softmax(x + 1000.0), y, rtol=1e-12)  # no overflow: the max is subtracted
    np.testing.assert_allclose(softmax(np.array([[0.0, np.log(3.0)]])), [[0.25, 0.75]], rtol=1e-15)


def test_softmax_non_finite_and_out_of_range_rows_are_unconstrained():
    x = np.array([[1, 2, 3], [1, np.nan, 3], [-np.inf, 0, 1], [-3e38, 0, 3e38], [-3e38, -2e38, -1e38]], np.float32)
    y = SM.compute({"X": x})["Y"]
    assert np.isfinite(y[[0, 4]]).all() and np.isnan(y[1:4]).all()
    np.testing.assert_allclose(y[4], [0, 0, 1])  # spreads beyond exp's range but within f32 are fine


def test_softmax_input_checks():
    with pytest.raises(ValueError, match="only the last axis"):
        SM.compute({"X": np.zeros((2, 3), np.float32)}, {"axis": 0})
    with pytest.raises(ValueError, match="rank >= 1"):
        SM.compute({"X": np.zeros((), np.float32)})
    assert SM.compute({"X": np.zeros((2, 3), np.float32)}, {"axis": 1})["Y"].shape == (2, 3)


# -- Add ---------------------------------------------------------------------------------------------------------
def test_add_broadcasts_like_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for b in (
        np.ones((2, 3, 4), np.float32),
        np.arange(4, dtype=np.float32),
        np.ones((3, 4), np.float32),
        np.float32(2.5) * np.ones((), np.float32),
        np.ones((1, 1), np.float32),
    ):
        np.testing.assert_array_equal(ADD.compute({"A": a, "B": b})["C"], add(a, b))
        np.testing.assert_array_equal(add(a, b), a.astype(np.float64) + b)


def test_add_non_finite_policy():
    a = np.array([60000, -60000, 1, np.nan, np.inf], np.float16)
    b = np.array([10000, -10000, 1, 0, 1], np.float16)
    c = ADD.compute({"A": a, "B": b})["C"]
    assert np.isnan(c[[0, 1, 3, 4]]).all() and c[2] == 2


def test_add_input_checks():
    with pytest.raises(ValueError, match="required"):
        ADD.compute({"A": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match="differs"):
        ADD.compute({"A": np.zeros(3, np.float32), "B": np.zeros(3, np.float16)})
