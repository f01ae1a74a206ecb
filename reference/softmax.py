"""Float64 softmax over the last axis, and its data-dependent tolerance.

``Y = exp(X - max) / sum(exp(X - max))`` per row of the last axis (ONNX Softmax-13, axis = -1). The
tolerance (README.md, "Row reductions") follows each element's exp argument and the row sum's depth.
"""

from __future__ import annotations

import numpy as np

from reference.rows import row_all, row_max, row_sum
from reference.rowwise import (
    EPS32,
    FLT_MAX,
    SAFETY,
    TINY32,
    RowReference,
    depth,
)

OP = "com.microsoft.Softmax"


def softmax(x) -> np.ndarray:
    """The float64 softmax of ``x`` over its last axis (inputs used exactly as given)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        e = np.exp(x - row_max(x))
        return e / row_sum(e)


class SoftmaxReference(RowReference):
    """The registry entry: ``compute`` and ``tolerance`` from the input X (and the ``axis`` attribute)."""

    op = OP
    roles = ("X",)

    def _inputs(self, inputs, attributes):
        return self._x(inputs, attributes, ("X",)), None

    def _bound(self, x, params, dtype, out_atol, out_rtol):
        n = x.shape[-1]
        u, h = EPS32, depth(n)
        x64 = x.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            d = x64 - row_max(x64)  # <= 0; the max itself is exact in f32
            e = np.exp(d)
            total = row_sum(e)  # >= 1
            y = e / total
            # exp: 3 + 2|d| ULP (WGSL), and the f32 rounding of d moves its argument by u|d|
            rel = (3 + 3 * np.abs(d)) * u
            # the sum: depth h over positive terms, each term's own error, exps that flushed to zero
            sum_rel = h * u + row_sum(e * rel) / total + n * TINY32 / total
            # y = e * (1 / sum): reciprocal 2.5 ULP + product 1 ULP (or one 2.5 ULP division)
            err = y * (rel + sum_rel + 3.5 * u) + 2 * TINY32
            allowed = SAFETY * err + out_atol
            # a non-finite value, or x - max beyond the f32 range, makes the row unconstrained
            row_ok = row_all(np.isfinite(x64)) & row_all(np.abs(d) <= FLT_MAX)
            ok = np.broadcast_to(row_ok, y.shape)
        why = (
            f"Softmax, row of n={n}: {SAFETY:g} x y ((3 + 3|x - max|) u + sum_rel + 3.5 u), sum_rel = "
            f"h u + the terms' own errors, h = {h}"
        )
        return y, allowed, ok, why
