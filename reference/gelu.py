"""Float64 GELU references.

Both functions take any array-like, compute in float64 and return float64.
Inputs are used exactly as given: callers pass tensors already rounded to the
tensor dtype (float16/float32), which are upcast without loss. Non-finite inputs
give NaN ("unconstrained", see README.md); every finite input gives a finite,
correctly signed result without floating-point warnings.
"""

from __future__ import annotations

import math

import numpy as np

#: Exact constants of the tanh approximation used by the reference. Kernels may
#: use the manifests' printed roundings (0.797885, 0.035677); the tolerance
#: budget carries that difference explicitly (see tolerance.py).
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
TANH_CUBIC = 0.044715

# Beyond this |x| the logistic below is exactly 0 or 1 in float64; clipping
# keeps x**3 far from overflow for any finite float64 input.
_U_CLIP = 1.0e6


def _special():
    """scipy.special, imported at the first GELU value: not by every process that imports the op records."""
    from scipy import special  # heavy: loaded on use

    return special


def _finite_only(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(x), y, np.nan)


def gelu_erf(x) -> np.ndarray:
    """Exact GELU x * Phi(x); ndtr has no 1 + erf(...) cancellation for x << 0."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", under="ignore"):  # -inf * 0 is masked below
        y = x * _special().ndtr(x)
    return _finite_only(x, y)


def gelu_tanh(x) -> np.ndarray:
    """tanh GELU 0.5*x*(1 + tanh(u)), u = sqrt(2/pi)*(x + 0.044715*x^3).

    Evaluated as x * expit(2u), since 0.5*(1 + tanh(u)) == 1/(1 + exp(-2u)):
    no cancellation for x << 0 and no overflow for huge |x|.
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", under="ignore"):  # underflow of tiny x is harmless
        xc = np.clip(np.nan_to_num(x), -_U_CLIP, _U_CLIP)
        u = SQRT_2_OVER_PI * xc * (1.0 + TANH_CUBIC * xc * xc)
        y = x * _special().expit(2.0 * u)
    return _finite_only(x, y)
