"""Simulated WebGPU kernels (numpy float32 arithmetic) and shared test data.

The kernels follow the evaluation the tolerance is derived for (README.md):
f32 arithmetic, the Numerical-Recipes erfc, a hand-written tanh via exp(-2|u|),
argument clamps so no intermediate overflows. `perturb` pushes every exp result
by +-(3 + 2|arg|) ULP and every division by +-2 ULP (WGSL's allowed error,
rounded to whole ULPs): +1/-1 for all elements, or "random" per element.
"""

from __future__ import annotations

import pathlib
import sys
import types

import numpy as np
import pytest

try:
    import reference  # noqa: F401
except ImportError:  # pytest run without the repo root on sys.path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

F = np.float32
NR_ERFC = (
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)
PRINTED = (0.797885, 0.035677)
EXACT = (np.sqrt(2 / np.pi), np.sqrt(2 / np.pi) * 0.044715)


def _push(y: np.ndarray, ulps, sign) -> np.ndarray:
    """Move f32 results by `ulps` ULPs in direction `sign` (array or scalar)."""
    if isinstance(sign, str):
        sign = np.random.default_rng(1).choice([-1.0, 1.0], size=y.shape)
    out = y.astype(np.float64) + sign * np.floor(ulps) * np.spacing(np.abs(y)).astype(np.float64)
    return out.astype(F)


def wgsl_exp(a, perturb=0):
    y = np.exp(a, dtype=F)
    return y if not perturb else _push(y, 3 + 2 * np.abs(a.astype(np.float64)), perturb)


def wgsl_div(p, q, perturb=0):
    y = np.divide(p, q, dtype=F)
    return y if not perturb else _push(y, 2.0, perturb)


def erfc_nr(a, perturb=0):
    """Numerical Recipes erfcc for a >= 0, fractional error < 1.2e-7, in f32."""
    t = wgsl_div(F(1), F(1) + F(0.5) * a, perturb)
    poly = F(NR_ERFC[-1])
    for c in NR_ERFC[-2::-1]:
        poly = F(c) + t * poly
    return t * wgsl_exp(-a * a - F(1.26551223) + t * poly, perturb)


def gelu_erf_f32(x, perturb=0):
    x = np.asarray(x, dtype=F)
    with np.errstate(under="ignore"):
        a = np.minimum(np.abs(x) * F(0.70710677), F(10))  # erfc(10) ~ 2e-45: beyond, 0
        c = erfc_nr(a, perturb)
        erf = np.where(x >= 0, F(1) - c, c - F(1))
        return F(0.5) * x * (F(1) + erf)


def gelu_tanh_f32(x, consts=PRINTED, perturb=0, form="tanh"):
    """form="tanh": 0.5*x*(1 + tanh(u)) (cancels for x<0); "logistic": x*sigmoid(2u).

    For |x| > 10 (|u| > 43) the kernel selects x or -0 outright: WGSL's division
    and exp slack would otherwise be multiplied by a huge x.
    """
    x = np.asarray(x, dtype=F)
    c1, c2 = F(consts[0]), F(consts[1])
    with np.errstate(under="ignore"):
        xc = np.clip(x, F(-10), F(10))
        u = xc * (c1 + c2 * xc * xc)
        e = wgsl_exp(F(-2) * np.abs(u), perturb)
        if form == "logistic":
            s = wgsl_div(F(1), F(1) + e, perturb)
            y = xc * np.where(u >= 0, s, e * s)
        else:
            th = np.sign(u) * wgsl_div(F(1) - e, F(1) + e, perturb)
            y = F(0.5) * xc * (F(1) + th)
    return np.where(x > 10, x, np.where(x < -10, F(0) * x, y))


def as_f16_kernel(kernel):
    """An f16 kernel: upcast, compute in f32, round once to f16."""

    def run(x, *args, **kw):
        with np.errstate(over="ignore"):
            return kernel(np.asarray(x).astype(F), *args, **kw).astype(np.float16)

    return run


def flush_subnormals(y: np.ndarray) -> np.ndarray:
    tiny = np.finfo(y.dtype).tiny
    return np.where(np.abs(y) < tiny, np.zeros_like(y), y)


def range_values(dtype) -> np.ndarray:
    """Both signs of log-spaced magnitudes over the dtype's finite range, plus edge values."""
    info = np.finfo(dtype)
    lo, hi = np.log10(float(info.smallest_subnormal)), np.log10(float(info.max))
    mags = np.logspace(lo, hi, 1500).astype(dtype)
    edges = np.array([0.0, info.smallest_subnormal, info.tiny, info.max, 1.0, 2.7], dtype=dtype)
    mags = np.concatenate([mags[np.isfinite(mags)], edges])
    return np.concatenate([mags, -mags])


@pytest.fixture(scope="session")
def sim():
    return types.SimpleNamespace(
        gelu_erf_f32=gelu_erf_f32,
        gelu_tanh_f32=gelu_tanh_f32,
        as_f16_kernel=as_f16_kernel,
        flush_subnormals=flush_subnormals,
        range_values=range_values,
        PRINTED=PRINTED,
        EXACT=EXACT,
    )


@pytest.fixture(scope="session")
def case_f32():
    """Standard f32 case: 4096 values of N(0, 2^2) as X[64, 64], bias[64] ~ N(0, 1)."""
    rng = np.random.default_rng(2024)
    return rng.normal(0, 2, (64, 64)).astype(F), rng.normal(0, 1, 64).astype(F)
