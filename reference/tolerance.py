"""Per-op, per-dtype tolerances: |actual - expected| <= atol + rtol * |expected|.

The numbers are derived in reference/README.md ("Tolerance derivation"); in short:

* unit: EPS32 = 2**-23, one f32 ULP relative at the bottom of a binade. WGSL lets
  every correctly rounded op round up *or* down, so each op costs 1 ULP, not 0.5;
  exp costs 3 + 2|x| ULP, division 2.5 ULP.
* f32: a first-order error budget of the kernel's f32 evaluation, split at z = 0
  (z = x + bias). For z >= 0 the output is >= z/2, so errors are bounded
  *relative* to it (rtol). For z < 0 the output is bounded (|gelu| <= 0.17) and
  goes to 0, so errors are bounded *absolutely* (atol), including the 1 + erf /
  1 + tanh cancellation. Each sum is doubled (SAFETY) for second-order terms,
  fma contraction and reassociation.
* f16: kernels compute in f32 and round once to f16 (either direction, 1 f16 ULP
  = 2**-10 relative) and may flush a subnormal f16 result to zero (2**-14 abs),
  on top of the f32 budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS32 = 2.0**-23
EPS16 = 2.0**-10
F16_MIN_NORMAL = 2.0**-14
SAFETY = 2.0

#: First-order f32 error budgets in EPS32 units: (relative for z >= 0, absolute for z < 0).
#: The term-by-term tables are in README.md.
F32_BUDGETS: dict[str, tuple[float, float]] = {
    "com.microsoft.FastGelu": (12.0, 16.0),
    "com.microsoft.Gelu": (22.0, 10.0),
}

SUPPORTED_DTYPES = ("float32", "float16")


class UnsupportedDtype(KeyError):
    """Raised for a dtype the suite has no tolerance for (only float32, float16)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Tolerance:
    """Elementwise bound atol + rtol*|expected| for outputs of dtype `dtype`."""

    atol: float
    rtol: float
    reason: str
    dtype: str

    def __post_init__(self) -> None:
        if not (self.atol >= 0 and self.rtol >= 0):
            raise ValueError(f"tolerance must be non-negative, got atol={self.atol}, rtol={self.rtol}")
        if not self.reason.strip():
            raise ValueError("every tolerance needs a reason")

    def allowed(self, expected) -> np.ndarray:
        return self.atol + self.rtol * np.abs(np.asarray(expected, dtype=np.float64))


#: Per (op, dtype) replacements of the derived tolerance; each must say why.
OVERRIDES: dict[tuple[str, str], Tolerance] = {}


def derived_tolerance(op: str, dtype: str) -> Tolerance:
    """The tolerance README.md derives for `op` at output dtype `dtype`."""
    if dtype not in SUPPORTED_DTYPES:
        raise UnsupportedDtype(f"{op}: no tolerance for dtype {dtype!r}; supported: {', '.join(SUPPORTED_DTYPES)}")
    rel, ab = F32_BUDGETS[op]
    rtol32, atol32 = SAFETY * rel * EPS32, SAFETY * ab * EPS32
    if dtype == "float32":
        return Tolerance(atol32, rtol32, f"f32 budget {rel:g}/{ab:g} EPS32 (rel/abs) x{SAFETY:g}", dtype)
    return Tolerance(
        F16_MIN_NORMAL + atol32,
        EPS16 + rtol32,
        "f16: one f16 rounding (1 ULP) + subnormal flush (2**-14) on top of the f32 budget",
        dtype,
    )


def tolerance_for(op: str, dtype: str) -> Tolerance:
    derived = derived_tolerance(op, dtype)  # validates op and dtype even when overridden
    return OVERRIDES.get((op, dtype), derived)
