"""Float64 LayerNormalization over the last axis, and its data-dependent tolerance.

``Y = (X - mean) / sqrt(var + epsilon) * scale + bias`` per row of the last axis, with the population
variance (ONNX LayerNormalization, axis = -1, stash_type = float32). The tolerance is derived in
README.md ("Row reductions"): it grows with the row's |mean| / sqrt(var + epsilon) and with the depth
h(n) of the row sums, which is what separates a two-pass kernel from a one-pass E[x^2] - mean^2 one.
"""

from __future__ import annotations

import numpy as np

from reference.rows import row_all, row_max, row_mean, row_sum
from reference.rowwise import (
    EPS32,
    FLT_MAX,
    SAFETY,
    TINY32,
    RowReference,
    depth,
    float_array,
    subnormal_part,
)

OP = "com.microsoft.LayerNormalization"
DEFAULT_EPSILON = 1e-5


def _stats(x: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, deviations, sqrt(var + epsilon)) of each row, in float64; the mean refined by a second pass."""
    with np.errstate(invalid="ignore", over="ignore"):
        mean = row_mean(x)
        d = x - mean
        shift = row_mean(d)
        mean, d = mean + shift, d - shift
        var = row_mean(d * d)
    return mean, d, np.sqrt(var + epsilon)


def layer_normalization(x, scale, bias=None, epsilon: float = DEFAULT_EPSILON) -> np.ndarray:
    """The float64 LayerNormalization of ``x`` over its last axis (inputs used exactly as given)."""
    x = np.asarray(x, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape)
    _, d, s = _stats(x, epsilon)
    with np.errstate(invalid="ignore", over="ignore"):
        y = d / s * scale
        if bias is not None:
            y = y + np.asarray(bias, dtype=np.float64)
    return y


class LayerNormReference(RowReference):
    """The registry entry: ``compute`` and ``tolerance`` from the inputs X, scale, bias and the attributes."""

    op = OP
    roles = ("X", "scale", "bias")

    # -- the model ------------------------------------------------------------------------------
    def _inputs(self, inputs, attributes):
        x = self._x(inputs, attributes, ("X", "scale"))
        others = {}
        for role in ("scale", "bias"):
            v = inputs.get(role)
            if v is None:
                continue
            v = float_array(OP, role, v)
            if v.dtype != x.dtype or v.shape != x.shape[-1:]:
                raise ValueError(f"{OP}: {role} must be {x.dtype} of shape {x.shape[-1:]}, got {v.dtype} {v.shape}")
            others[role] = v
        epsilon = float(dict(attributes or {}).get("epsilon", DEFAULT_EPSILON))
        if not epsilon > 0:
            raise ValueError(f"{OP}: epsilon must be positive, got {epsilon}")
        return x, (others["scale"], others.get("bias"), epsilon)

    def _bound(self, x, params, dtype, out_atol, out_rtol):
        scale, bias, epsilon = params
        n = x.shape[-1]
        u, h = EPS32, depth(n)
        x64 = x.astype(np.float64)
        g = scale.astype(np.float64)
        b = np.zeros(n) if bias is None else bias.astype(np.float64)
        _, d, s = _stats(x64, epsilon)
        with np.errstate(invalid="ignore", over="ignore"):
            z = d / s
            y = z * g + b
            A = row_mean(np.abs(x64))
            # the computed mean is off by at most (h + 3) u A (sum h, 1/n and the product 2), plus what flushed
            # subnormal inputs take away; in units of s this shifts every normalized value alike
            xflush = 2.0 * row_max(subnormal_part(x, x.dtype))
            shift = ((h + 3) * u * A + xflush) / s
            # variance: d rounding (2u on d^2), square (u), sum (h u), 1/n and product (2u), + epsilon (u);
            # the mean's error adds shift^2 (the cross term sums to zero), flushed tiny squares their sum
            d2 = d * d
            var_flush = row_mean(np.where(d2 < TINY32, d2, 0.0))
            var_rel = (h + 7) * u + shift**2 + var_flush / s**2
            z_rel = var_rel / 2 + 4 * u  # inverseSqrt 2 ULP, d rounding and d * rstd
            flush_gb = np.abs(z) * subnormal_part(g, x.dtype) + subnormal_part(b, x.dtype) + 2 * TINY32
            err = np.abs(g) * (shift + z_rel * np.abs(z)) + u * (np.abs(z * g) + np.abs(y)) + flush_gb
            allowed = SAFETY * err + out_atol
            # rows whose f32 sums could overflow, or with a non-finite value, are unconstrained (WGSL: indeterminate)
            row_ok = (
                row_all(np.isfinite(x64))
                & (row_sum(np.abs(x64)) <= FLT_MAX / 2)
                & (row_sum((np.abs(d) + shift * s) ** 2) <= FLT_MAX / 2)
            )
            col_ok = np.isfinite(g) & np.isfinite(b)
            out_max = float(np.finfo(dtype).max)
            ok = row_ok & col_ok & (np.abs(y) + allowed + out_rtol * np.abs(y) <= out_max)
        why = (
            f"LayerNorm, row of n={n}: {SAFETY:g} x (|scale| (shift + z_rel |z|) + u (|z scale| + |y|)), "
            f"shift = (h + 3) u mean|x| / sqrt(var + eps), h = {h}"
        )
        return y, allowed, ok, why
