"""The tolerance accepts correct simulated kernels and rejects wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

from reference import Tolerance, UnsupportedDtype, compare, reference_for
from reference import tolerance as tolmod

FAST, GELU = reference_for("com.microsoft", "FastGelu"), reference_for("com.microsoft", "Gelu")
PERTURB = [0, 1, -1, "random"]


def _kernels(sim, dtype):
    wrap = (lambda k: k) if dtype == "float32" else sim.as_f16_kernel
    erf, tanh = wrap(sim.gelu_erf_f32), wrap(sim.gelu_tanh_f32)
    return {
        "erf": (GELU, lambda x, p: erf(x, perturb=p)),
        "tanh/printed": (FAST, lambda x, p: tanh(x, consts=sim.PRINTED, perturb=p)),
        "tanh/exact": (FAST, lambda x, p: tanh(x, consts=sim.EXACT, perturb=p)),
        "logistic/printed": (FAST, lambda x, p: tanh(x, consts=sim.PRINTED, perturb=p, form="logistic")),
    }


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kernel", ["erf", "tanh/printed", "tanh/exact", "logistic/printed"])
@pytest.mark.parametrize("perturb", PERTURB)
def test_correct_kernels_pass_on_whole_finite_range(sim, dtype, kernel, perturb, case_f32):
    """Range values (subnormal..max, both signs) and normal data, with WGSL-worst-case exp/division."""
    ref, run = _kernels(sim, dtype)[kernel]
    x = np.concatenate([sim.range_values(dtype), case_f32[0].ravel().astype(dtype)])
    result = compare(run(x, perturb), ref.compute({"X": x})["Y"], ref.tolerance(dtype), inputs=x)
    assert result.passed, result.message()
    assert result.checked == x.size
    if dtype == "float32":
        assert result.worst_ratio < 0.5  # derived budget has headroom over the simulated worst case


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kernel", ["erf", "tanh/printed"])
def test_flushed_subnormals_pass(sim, dtype, kernel):
    ref, run = _kernels(sim, dtype)[kernel]
    x = sim.range_values(dtype)
    flushed_in = sim.flush_subnormals(x)
    y = sim.flush_subnormals(run(flushed_in, 0))
    result = compare(y, ref.compute({"X": x})["Y"], ref.tolerance(dtype), inputs=x)
    assert result.passed, result.message()


def test_kernel_with_bias_passes(sim, case_f32):
    x, bias = case_f32
    z = (x + bias).astype(np.float32)  # the kernel's f32 add
    result = compare(sim.gelu_tanh_f32(z), FAST.compute({"X": x, "bias": bias})["Y"], FAST.tolerance("float32"))
    assert result.passed, result.message()


# --- discrimination on the standard f32 case -------------------------------------------------


def test_rejects_tanh_gelu_where_erf_is_specified(sim, case_f32):
    x = case_f32[0]
    result = compare(sim.gelu_tanh_f32(x), GELU.compute({"X": x})["Y"], GELU.tolerance("float32"))
    assert not result.passed and result.worst_ratio > 10


def test_rejects_erf_gelu_where_tanh_is_specified(sim, case_f32):
    x, bias = case_f32
    z = x + bias
    result = compare(sim.gelu_erf_f32(z), FAST.compute({"X": x, "bias": bias})["Y"], FAST.tolerance("float32"))
    assert not result.passed and result.worst_ratio > 10


def test_rejects_dropped_bias(sim, case_f32):
    x, bias = case_f32
    result = compare(sim.gelu_tanh_f32(x), FAST.compute({"X": x, "bias": bias})["Y"], FAST.tolerance("float32"))
    assert not result.passed and result.worst_ratio > 10


def test_rejects_bias_along_wrong_axis(sim, case_f32):
    x, bias = case_f32  # X is [64, 64]: bias[i] per row is computable but wrong
    result = compare(
        sim.gelu_tanh_f32(x + bias[:, None]), FAST.compute({"X": x, "bias": bias})["Y"], FAST.tolerance("float32")
    )
    assert not result.passed and result.worst_ratio > 10


def test_printed_constants_difference_is_within_budget():
    # Evaluated in float64 so only the constants differ: at most a few percent of the f32 tolerance.
    x = np.linspace(-12, 12, 200001)
    c1, c2 = 0.797885, 0.035677
    printed = x / (1 + np.exp(-2 * (c1 * x + c2 * x**3)))
    ref = FAST.compute({"X": x})["Y"]
    assert (np.abs(printed - ref) / FAST.tolerance("float32").allowed(ref)).max() < 0.1


# --- structure --------------------------------------------------------------------------------


def test_derived_numbers():
    eps = 2.0**-23
    assert FAST.tolerance("float32") == Tolerance(32 * eps, 24 * eps, FAST.tolerance("float32").reason, "float32")
    assert GELU.tolerance("float32").rtol == 44 * eps and GELU.tolerance("float32").atol == 20 * eps
    f16 = GELU.tolerance("float16")
    assert f16.rtol == 2.0**-10 + 44 * eps and f16.atol == 2.0**-14 + 20 * eps


@pytest.mark.parametrize("dtype", ["float64", "bfloat16", "f32"])
def test_unsupported_dtype_is_a_key_error_naming_supported_ones(dtype):
    with pytest.raises(KeyError) as info:
        GELU.tolerance(dtype)
    assert isinstance(info.value, UnsupportedDtype)
    assert dtype in str(info.value) and "float32, float16" in str(info.value)


def test_override_replaces_derived_tolerance_and_needs_reason(monkeypatch):
    custom = Tolerance(1e-3, 0.0, "hardware X tanh uses the 1e-5 abs clause", "float32")
    monkeypatch.setitem(tolmod.OVERRIDES, ("com.microsoft.Gelu", "float32"), custom)
    assert GELU.tolerance("float32") is custom and FAST.tolerance("float32") != custom
    with pytest.raises(ValueError, match="reason"):
        Tolerance(1e-3, 0.0, " ", "float32")
    with pytest.raises(ValueError):
        Tolerance(-1.0, 0.0, "x", "float32")


def test_allowed_is_elementwise():
    tol = Tolerance(1e-6, 1e-3, "r", "float32")
    np.testing.assert_allclose(tol.allowed(np.array([0.0, -2.0, 10.0])), [1e-6, 1e-6 + 2e-3, 1e-6 + 1e-2])
