"""Every finite f16 input: through the real kernels, and through the f16 erf formula with its argued mutants."""

import runpy

import numpy as np
import pytest

from conformance import load_kernel
from conformance.engine.package import REPO_SPECS
from conformance.tools import proposal
from reference import compare, reference_for
from tests.runtime.test_numerics import check

EVERY_F16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
EVERY_F16 = EVERY_F16[np.isfinite(EVERY_F16)]  # 63,488 values, a multiple of 8


@pytest.mark.parametrize("packed", [False, True], ids=["shipped", "packed-f16"])
@pytest.mark.parametrize("op", ["com.microsoft.FastGelu", "com.microsoft.Gelu"])
def test_every_finite_f16_input_conforms(device, tmp_path, op, packed):
    package = (
        proposal.apply(REPO_SPECS / op, REPO_SPECS / "proposals" / "packed-f16.json", tmp_path)
        if packed
        else REPO_SPECS / op
    )
    plan, run, result = check(load_kernel(package, device=device), X=EVERY_F16)
    assert plan.variant == (
        "vec8_f16" + ("_no_bias" if "Fast" in op else "") if packed else "vec4_no_bias" if "Fast" in op else "vec4"
    )
    assert result.checked == EVERY_F16.size and np.isfinite(run.outputs["Y"]).all()


FIT = runpy.run_path(str(REPO_SPECS.parent / "research" / "fit_phi_f16.py"))


def _gelu_f16(coefs, *, lo=4.6, hi=4.6, zero_below=4.6, inclusive=False):
    """The template's f16 erf branch in NumPy f32, rounded to f16 (round to nearest)."""
    x = EVERY_F16.astype(np.float32)
    y = x * FIT["phi_f32"](x, coefs, xmax=hi, xmin=lo)
    zero = x <= -np.float32(zero_below) if inclusive else x < -np.float32(zero_below)
    return np.where(zero, np.float32(0), y).astype(np.float16)


def _nudged(i):
    c = list(FIT["coefficients"]())
    c[i] *= 1.001
    return c


ARGUED = {  # the mutants conformance/tools/mutate/equivalent.yaml argues conforming, as the template would compute them
    "shipped": {},
    "clamp -4.6 nudged": dict(lo=4.6 * 1.001),
    "clamp +4.6 nudged": dict(hi=4.6 * 1.001),
    "zero below -4.6 nudged": dict(zero_below=4.6 * 1.001),
    "zero at -4.6 too": dict(inclusive=True),
}


@pytest.mark.parametrize("coefs", ["fit", "x^2 +0.1%", "x^6 +0.1%", "x^14 sign"])
@pytest.mark.parametrize("edge", list(ARGUED))
def test_argued_f16_erf_mutants_conform_on_every_f16_input(coefs, edge):
    c = {
        "fit": FIT["coefficients"](),
        "x^2 +0.1%": _nudged(1),
        "x^6 +0.1%": _nudged(3),
        "x^14 sign": [*FIT["coefficients"]()[:7], -FIT["coefficients"]()[7]],
    }[coefs]
    ref = reference_for("com.microsoft", "Gelu")
    result = compare(
        _gelu_f16(c, **ARGUED[edge]), ref.compute({"X": EVERY_F16})["Y"], ref.tolerance("float16"), inputs=EVERY_F16
    )
    assert result.passed and result.worst_ratio < 0.5, result.message()


def test_a_real_fault_in_the_f16_erf_formula_is_caught_on_every_f16_input():
    """The control: nudging the leading coefficient by 0.1% (a mutant the suite kills) fails this check too."""
    ref = reference_for("com.microsoft", "Gelu")
    result = compare(
        _gelu_f16(_nudged(0)), ref.compute({"X": EVERY_F16})["Y"], ref.tolerance("float16"), inputs=EVERY_F16
    )
    assert not result.passed
