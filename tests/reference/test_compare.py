"""compare(): structured result, edge cases and the failure message."""

from __future__ import annotations

import numpy as np
import pytest

from reference import Comparison, ElementTolerance, Tolerance, compare

TOL = Tolerance(1e-6, 1e-5, "test tolerance", "float32")


def test_pass_and_counts():
    e = np.linspace(-1, 1, 10)
    r = compare(e.astype(np.float32), e, TOL)
    assert isinstance(r, Comparison) and r.passed and r.checked == 10 and r.mismatches == 0
    assert r.mismatch_fraction == 0.0 and 0 <= r.worst_ratio < 1 and len(r.worst) == 5
    assert r.message().startswith("passed")


def test_signed_zeros_are_equal():
    r = compare(np.array([-0.0, 0.0], np.float32), np.array([0.0, -0.0]), Tolerance(0.0, 0.0, "exact", "float32"))
    assert r.passed and r.worst_ratio == 0.0


def test_worst_elements_are_reported_with_all_fields():
    e = np.zeros((2, 3))
    e[1, 2] = 4.0
    a = e.astype(np.float32)
    a[1, 2] = np.float32(4.0) + np.spacing(np.float32(4.0)) * 200  # 200 ULP
    a[0, 1] = 5e-7  # within atol
    inputs = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = compare(a, e, TOL, inputs=inputs, max_report=2)
    assert not r.passed and r.mismatches == 1 and r.mismatch_fraction == pytest.approx(1 / 6)
    w = r.worst[0]
    assert w.index == (1, 2) and w.input == 5.0 and w.expected == 4.0
    assert w.abs_err == pytest.approx(200 * 2.0**-21) and w.rel_err == pytest.approx(w.abs_err / 4)
    assert w.ulp_err == pytest.approx(200) and w.allowed == pytest.approx(1e-6 + 4e-5)
    assert r.worst_ratio == pytest.approx(w.abs_err / w.allowed) and r.worst[1].index == (0, 1)


def test_nan_or_inf_in_actual_is_a_mismatch():
    e = np.array([1.0, 2.0, 3.0])
    a = np.array([np.nan, np.inf, 3.0], np.float32)
    r = compare(a, e, TOL)
    assert not r.passed and r.mismatches == 2 and r.worst_ratio == np.inf


def test_nothing_checked_passes_with_zero_ratio():
    r = compare(np.ones(3, np.float32), np.full(3, np.nan), TOL)
    assert r.passed and r.checked == 0 and r.worst_ratio == 0.0 and r.unconstrained == 3


@pytest.mark.parametrize(
    "actual, expected, fragment",
    [
        (np.zeros((2, 3), np.float32), np.zeros((3, 2)), "shape mismatch: actual (2, 3), expected (3, 2)"),
        (np.zeros(3, np.float16), np.zeros(3), "dtype mismatch: actual float16, expected float32"),
    ],
)
def test_shape_or_dtype_mismatch_is_a_failed_result(actual, expected, fragment):
    r = compare(actual, expected, TOL)
    assert not r.passed and r.error and fragment in r.message() and r.message().startswith("FAILED")


def test_ulp_is_in_output_dtype():
    e = np.array([1.0])
    a16 = np.array([1.0 + 2 * 2.0**-10], np.float16)
    r = compare(a16, e, Tolerance(1.0, 0.0, "loose", "float16"))
    assert r.worst[0].ulp_err == pytest.approx(2.0)
    r = compare(np.array([2.0**-24], np.float16), np.array([0.0]), Tolerance(1.0, 0.0, "loose", "float16"))
    assert r.worst[0].ulp_err == pytest.approx(1.0)  # subnormal spacing


def test_failure_message_is_actionable():
    e = np.linspace(0.5, 2.0, 8)
    a = e.astype(np.float32)
    a[3] += 0.01
    r = compare(a, e, TOL, inputs=np.arange(8, dtype=np.float32))
    msg = r.message()
    assert msg.startswith("FAILED: 1 of 8 checked elements out of tolerance")
    assert "1e-06 + 1e-05*|expected|" in msg and "test tolerance" in msg
    for col in ("index", "input", "expected", "actual", "abs_err", "rel_err", "ulp_err", "allowed", "err/allowed"):
        assert col in msg
    table = msg.splitlines()[3:]
    assert table[1].split()[0] == "(3,)" and table[1].split()[1] == "3"


def test_a_per_element_tolerance_is_worded_per_element():
    """The message states an ElementTolerance's range, not its largest atol as if every element had it."""
    tol = ElementTolerance(1e-3, 0.0, "row-dependent", "float32", element_atol=np.array([1e-6, 1e-3]))
    text = compare(np.array([0.5, 0.0], np.float32), np.array([0.0, 0.0]), tol).message()
    assert "atol[i] per element (from 1e-06 to 0.001;" in text
    assert "<= 0.001 +" not in text
