"""Fit of Phi(x) for the f16 outputs of the erf GELU template path, and its error.

Phi(x) = 1 / (1 + 2^(x * P(x^2))) with P fitted to -log2(e) * logit(Phi(x)) / x on |x| <= XMAX
(logit(Phi) is odd, so P is a polynomial in x^2).  Costs one exp2 and one division, like the
tanh GELU, instead of the f32 path's reciprocal, 9-term series and exp.  Beyond XMAX: x > XMAX
clamps (relative error < 2.2e-6); x < -XMAX gives 0, as |gelu| < 1e-5 there, an f16 subnormal.

    python research/fit_phi_f16.py     # prints the coefficients and the error evaluated in f32
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, ndtr

XMAX = 4.6
DEGREE = 7
LOG2E = 1.4426950408889634


def coefficients(degree: int = DEGREE, xmax: float = XMAX) -> list[float]:
    """P's coefficients, lowest power of x^2 first, rounded to 9 significant digits as the template holds them."""
    k = np.arange(4000)
    x = xmax / 2 * (1 - np.cos(np.pi * (k + 0.5) / 4000))  # Chebyshev nodes in (0, xmax)
    x = x[x > 1e-3]
    logit_over_x = (log_ndtr(x) - log_ndtr(-x)) / x
    fit = np.polynomial.chebyshev.Chebyshev.fit(x * x, logit_over_x, degree, domain=[0, xmax * xmax])
    return [float(f"{-LOG2E * c:.9g}") for c in fit.convert(kind=np.polynomial.Polynomial).coef]


def phi_f32(x: np.ndarray, coefs: list[float], xmax: float = XMAX, xmin: float | None = None) -> np.ndarray:
    """Phi as the template computes it, in f32 (Horner in x^2, exp2, division), x clamped to [-xmin, xmax]."""
    xc = np.clip(x.astype(np.float32), np.float32(-(xmax if xmin is None else xmin)), np.float32(xmax))
    s = xc * xc
    acc = np.float32(coefs[-1])
    for c in reversed(coefs[:-1]):
        acc = np.float32(c) + s * acc
    return np.float32(1) / (np.float32(1) + np.exp2(xc * acc, dtype=np.float32))


def max_relative_error(coefs: list[float], xmax: float = XMAX) -> float:
    x = np.linspace(-xmax, xmax, 400001)
    return float(np.max(np.abs(phi_f32(x, coefs, xmax) / ndtr(x) - 1)))


if __name__ == "__main__":
    cs = coefficients()
    print("P(s) =", " + ".join(f"{c!r} s^{i}" for i, c in enumerate(cs)))
    print(f"max relative error of Phi on |x| <= {XMAX}, evaluated in f32: {max_relative_error(cs):.3g}")
