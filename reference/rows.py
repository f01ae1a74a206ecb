"""Reductions over the last axis (keepdims), the same bits as NumPy's, without NumPy's cost per row on short rows.

NumPy reduces a row of fewer than 8 elements left to right (its pairwise summation starts at 8 elements), one call of
its inner loop per row: over millions of rows of 3 (a heavy LayerNormalization case) that per-row cost is most of the
reference's time. For such rows these functions combine whole columns instead, in the same left-to-right order,
which gives the same bits (``tests/reference/test_rows.py`` holds NumPy to that on every row length they take this
path for); longer rows go through NumPy itself.
"""

from __future__ import annotations

import numpy as np

#: Rows shorter than this are combined column by column.
SHORT_ROW = 8


def _columns(ufunc: np.ufunc, x: np.ndarray, start: float | None = None) -> np.ndarray:
    out = np.array(x[..., :1], copy=True) if start is None else ufunc(start, x[..., :1])
    for j in range(1, x.shape[-1]):
        ufunc(out, x[..., j : j + 1], out=out)
    return out


def _short(x: np.ndarray) -> bool:
    return 0 < x.shape[-1] < SHORT_ROW and x.ndim > 1


def row_sum(x: np.ndarray) -> np.ndarray:
    """``x.sum(axis=-1, keepdims=True)``."""
    return _columns(np.add, x, 0.0) if _short(x) else x.sum(axis=-1, keepdims=True)  # NumPy's sum starts at +0


def row_mean(x: np.ndarray) -> np.ndarray:
    """``x.mean(axis=-1, keepdims=True)`` (NumPy's mean is the sum divided by the count)."""
    return row_sum(x) / x.shape[-1] if _short(x) else x.mean(axis=-1, keepdims=True)


def row_max(x: np.ndarray) -> np.ndarray:
    """``x.max(axis=-1, keepdims=True)`` (a NaN in a row gives NaN)."""
    return _columns(np.maximum, x) if _short(x) else x.max(axis=-1, keepdims=True)


def row_all(x: np.ndarray) -> np.ndarray:
    """``x.all(axis=-1, keepdims=True)`` of a boolean array."""
    return _columns(np.logical_and, x) if _short(x) else x.all(axis=-1, keepdims=True)
