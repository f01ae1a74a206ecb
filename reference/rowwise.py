"""What the row references (LayerNormalization, Softmax) share: the reduction-depth contract, the
per-element tolerance type, and the float constants of the error model (see README.md, "Row reductions").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from reference.rows import SHORT_ROW
from reference.tolerance import EPS32, SAFETY, Tolerance, UnsupportedDtype

#: Smallest normal f32: a subnormal operand or result may be flushed to zero (WGSL allows it).
TINY32 = 2.0**-126
FLT_MAX = float(np.finfo(np.float32).max)


def depth(n: int) -> int:
    """h(n): how many inexact additions any term may pass through on its way into the sum of a row of n.

    2*ceil(log2 n) + 4 covers a tree (workgroup) reduction of per-thread partial sums, where each
    thread sums its terms pairwise or by a binary-counter cascade, plus a pairwise fold of vec4 lanes,
    for any workgroup size (README.md derives it). A sequential per-thread chain over n/W terms does
    not fit it for long rows.
    """
    return 2 * math.ceil(math.log2(max(n, 1))) + 4


@dataclass(frozen=True)
class ElementTolerance(Tolerance):
    """A tolerance whose absolute part is per element (it depends on the row's data).

    ``allowed(expected) = element_atol + rtol * |expected|``; ``atol`` holds the largest
    ``element_atol`` over the constrained elements, for messages.
    """

    element_atol: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.element_atol is None:
            raise ValueError("ElementTolerance needs element_atol")
        a = np.asarray(self.element_atol, dtype=np.float64)
        if not (a >= 0).all():
            raise ValueError("element_atol must be non-negative and not NaN")
        object.__setattr__(self, "element_atol", a)

    def allowed(self, expected) -> np.ndarray:
        expected = np.asarray(expected, dtype=np.float64)
        return np.broadcast_to(self.element_atol, expected.shape) + self.rtol * np.abs(expected)


def output_terms(dtype: str) -> tuple[float, float, str]:
    """(atol, rtol, why) added for the output's own rounding and flush, outside the f32 budget."""
    if dtype == "float32":
        return TINY32, 0.0, "an f32 subnormal output may be flushed (2**-126)"
    if dtype == "float16":
        return 2.0**-14, 2.0**-10, "one f16 rounding of the f32 result (2**-10) + f16 subnormal flush (2**-14)"
    raise UnsupportedDtype(f"no tolerance for dtype {dtype!r}; supported: float32, float16")


def subnormal_part(a: np.ndarray, dtype) -> np.ndarray:
    """|a| where a is subnormal in ``dtype`` (an implementation may read it as 0), else 0."""
    tiny = float(np.finfo(dtype).tiny)
    mag = np.abs(np.asarray(a, dtype=np.float64))
    return np.where(mag < tiny, mag, 0.0)


def float_array(op: str, role: str, value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind != "f":
        raise ValueError(f"{op}: {role} must be a floating-point array, got dtype {arr.dtype}")
    return arr


__all__ = [
    "EPS32",
    "SAFETY",
    "TINY32",
    "FLT_MAX",
    "ElementTolerance",
    "depth",
    "output_terms",
    "subnormal_part",
    "float_array",
]


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _same_bits(kept: Mapping[str, Any], inputs: Mapping[str, Any]) -> bool:
    """Whether ``inputs`` hold the same arrays, bit for bit (dtype, shape and bytes), as ``kept``."""
    for role, value in inputs.items():
        old = kept.get(role)
        if (value is None) != (old is None):
            return False
        if value is None:
            continue
        value = np.asarray(value)
        if value.dtype != old.dtype or value.shape != old.shape or not np.array_equal(_bytes(value), _bytes(old)):
            return False
    return kept.keys() == inputs.keys()


#: About how many elements of X a row op's bound works on at a time (whole rows; a longer row is one block).
ROW_BLOCK = 1 << 16


class RowReference:
    """A row op's reference. A subclass gives ``_inputs(inputs, attributes) -> (X, params)`` (its checks) and
    ``_bound(x, params, dtype, out_atol, out_rtol) -> (y, allowed, ok, why)`` (the float64 result, the allowed absolute error
    per element, where it is constrained, and the model in words); ``analyse``, ``compute`` and ``tolerance``
    follow from them the same way for every row op."""

    op = ""
    roles: tuple[str, ...] = ()

    def _x(
        self, inputs: Mapping[str, Any], attributes: Mapping[str, Any] | None, required: tuple[str, ...]
    ) -> np.ndarray:
        """X, after the checks every row op makes: no unknown input, the ``required`` ones present, X of rank >= 1,
        the reduction over the last axis (the only ``axis`` supported)."""
        unknown = sorted(k for k, v in inputs.items() if k not in self.roles and v is not None)
        if unknown:
            raise ValueError(f"{self.op}: unexpected input(s) {unknown}; inputs are {list(self.roles)}")
        if any(inputs.get(r) is None for r in required):
            names = " and ".join(f"'{r}'" for r in required)
            raise ValueError(
                f"{self.op}: {'inputs' if len(required) > 1 else 'input'} {names} "
                f"{'are' if len(required) > 1 else 'is'} required"
            )
        x = float_array(self.op, "X", inputs["X"])
        if x.ndim < 1:
            raise ValueError(f"{self.op}: X must have rank >= 1, got shape {x.shape}")
        axis = int(dict(attributes or {}).get("axis", -1))
        if axis not in (-1, x.ndim - 1):
            raise ValueError(f"{self.op}: only the last axis is supported (axis -1 or {x.ndim - 1}), got {axis}")
        return x

    def analyse(
        self, inputs: Mapping[str, Any], attributes: Mapping[str, Any] | None = None, dtype: str | None = None
    ) -> tuple[np.ndarray, np.ndarray, float, str]:
        """(expected with NaN where unconstrained, allowed absolute error, rtol, reason) for output ``dtype``
        (default: X's); the output's own rounding and flush (``output_terms``) come on top of the op's bound.

        ``compute`` and ``tolerance`` of one case both ask this of the same inputs: the last answer is kept, with a
        copy of the inputs it was made from, and given again for inputs of the same bits (a heavy case's
        reference over millions of rows is then made once, not twice)."""
        x, params = self._inputs(inputs, attributes)
        dtype = dtype or x.dtype.name
        key = (tuple(sorted(inputs)), repr(sorted(dict(attributes or {}).items())), dtype)
        last = getattr(self, "_last", None)
        if last is not None and last[0] == key and _same_bits(last[1], inputs):
            return last[2]
        result = self._analyse(x, params, dtype)
        for array in result[:2]:
            array.flags.writeable = False  # handed out again: nobody may change it in place
        self._last = (key, {r: None if v is None else np.array(v, copy=True) for r, v in inputs.items()}, result)
        return result

    def _analyse(self, x: np.ndarray, params, dtype: str) -> tuple[np.ndarray, np.ndarray, float, str]:
        """The bound of every row, a block of rows at a time: each row's values depend on that row alone, and a
        block's temporaries stay small (over millions of rows, whole-tensor temporaries cost more in fresh memory
        than in arithmetic). Short rows go column-major: NumPy then runs each operation down a column of the block,
        not one short row at a time (the same elementwise results)."""
        out_atol, out_rtol, out_why = output_terms(dtype)
        if x.size == 0:
            return np.zeros(x.shape), np.zeros(x.shape), out_rtol, out_why
        rows = x.reshape(-1, x.shape[-1])
        step = max(1, ROW_BLOCK // rows.shape[1])
        if rows.shape[0] <= step:  # one block: no copies
            y, bound, ok, why = self._bound(x, params, dtype, out_atol, out_rtol)
            return np.where(ok, y, np.nan), np.where(ok, bound, 0.0), out_rtol, f"{why}; + {out_why}"
        expected, allowed = np.empty(rows.shape), np.empty(rows.shape)
        for start in range(0, rows.shape[0], step):
            block = slice(start, start + step)
            part = rows[block] if rows.shape[1] >= SHORT_ROW else np.asfortranarray(rows[block])
            y, bound, ok, why = self._bound(part, params, dtype, out_atol, out_rtol)
            np.copyto(expected[block], np.where(ok, y, np.nan))
            np.copyto(allowed[block], np.where(ok, bound, 0.0))
        return expected.reshape(x.shape), allowed.reshape(x.shape), out_rtol, f"{why}; + {out_why}"

    def compute(self, inputs: Mapping[str, Any], attributes: Mapping[str, Any] | None = None) -> dict:
        return {"Y": self.analyse(inputs, attributes)[0]}

    def tolerance(
        self, dtype: str, inputs: Mapping[str, Any] | None = None, attributes: Mapping[str, Any] | None = None
    ) -> ElementTolerance:
        if inputs is None:
            raise ValueError(f"{self.op}: the tolerance depends on each row's data; pass the inputs")
        expected, allowed, rtol, why = self.analyse(inputs, attributes, dtype)
        finite = allowed[~np.isnan(expected)]
        return ElementTolerance(
            float(finite.max()) if finite.size else 0.0,
            rtol,
            why,
            dtype,
            element_atol=np.where(np.isnan(expected), 0.0, allowed),
        )
