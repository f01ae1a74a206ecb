"""Float64 Add with NumPy broadcasting, and its tolerance (README.md, "Add").

``C = A + B``. The kernel package accepts B broadcast into A's shape (B equal to A, a suffix of A's
shape, or a single element); the reference computes any NumPy broadcast. Elements where the float64
sum is non-finite or beyond the dtype's largest value are unconstrained (NaN), as for the GELU ops.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from reference.rowwise import EPS32, TINY32, float_array
from reference.tolerance import Tolerance, UnsupportedDtype

OP = "ai.onnx.Add"


def add(a, b) -> np.ndarray:
    """``a + b`` in float64 with NumPy broadcasting (inputs used exactly as given)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(a, dtype=np.float64) + np.asarray(b, dtype=np.float64)


def add_tolerance(dtype: str) -> Tolerance:
    """One addition: 1 ULP of the result either way (<= 2**-23 relative), three flushed subnormals."""
    if dtype == "float32":
        return Tolerance(
            3 * TINY32,
            EPS32,
            "one f32 add, rounded either way (2**-23); subnormal A, B and C may flush (3 x 2**-126)",
            dtype,
        )
    if dtype == "float16":
        return Tolerance(
            3 * 2.0**-14,
            2.0**-10 + EPS32,
            "f32 add (2**-23) then one f16 rounding (2**-10), or one "
            "f16 add; subnormal A, B and C may flush (3 x 2**-14)",
            dtype,
        )
    raise UnsupportedDtype(f"{OP}: no tolerance for dtype {dtype!r}; supported: float32, float16")


class AddReference:
    op = OP
    roles = ("A", "B")

    def compute(self, inputs: Mapping[str, Any], attributes: Mapping[str, Any] | None = None) -> dict:
        unknown = sorted(k for k, v in inputs.items() if k not in self.roles and v is not None)
        if unknown:
            raise ValueError(f"{OP}: unexpected input(s) {unknown}; inputs are A, B")
        if inputs.get("A") is None or inputs.get("B") is None:
            raise ValueError(f"{OP}: inputs 'A' and 'B' are required")
        a, b = float_array(OP, "A", inputs["A"]), float_array(OP, "B", inputs["B"])
        if a.dtype != b.dtype:
            raise ValueError(f"{OP}: B dtype {b.dtype} differs from A dtype {a.dtype}")
        c = add(a, b)
        with np.errstate(invalid="ignore"):
            constrained = np.abs(c) <= float(np.finfo(a.dtype).max)
        return {"C": np.where(constrained, c, np.nan)}

    def tolerance(
        self, dtype: str, inputs: Mapping[str, Any] | None = None, attributes: Mapping[str, Any] | None = None
    ) -> Tolerance:
        return add_tolerance(dtype)
