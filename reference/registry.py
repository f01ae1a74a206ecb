"""Map manifest ops ("domain.name") to their references.

A reference computes the expected outputs from the manifest's input roles as a dict of
float64 arrays (GELU: "X", optional "bias" -> {"Y": ...}); NaN marks elements the suite
leaves unconstrained (non-finite x + bias, or |x + bias| beyond the tensor dtype's finite
range, where WGSL makes the kernel's value indeterminate).

Every reference has ``compute(inputs[, attributes])`` and ``tolerance(dtype, inputs=None,
attributes=None)``; the row ops (LayerNormalization, Softmax) need the inputs for their
tolerance, the others ignore them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from reference.add import AddReference
from reference.gelu import gelu_erf, gelu_tanh
from reference.layernorm import LayerNormReference
from reference.softmax import SoftmaxReference
from reference.tolerance import Tolerance, tolerance_for


class ReferenceNotFound(LookupError):
    """No reference is registered for an op: a hard error, never a skipped check."""


@dataclass(frozen=True)
class Reference:
    op: str
    activation: Callable[[np.ndarray], np.ndarray]
    accepts_bias: bool
    min_rank: int  # the manifest's rank requirement on X

    def tolerance(self, dtype: str, inputs=None, attributes=None) -> Tolerance:
        return tolerance_for(self.op, dtype)  # the same for any data

    def compute(self, inputs: Mapping[str, np.ndarray | None], attributes=None) -> dict[str, np.ndarray]:
        x, bias = self._validate(inputs)
        z = x.astype(np.float64)
        if bias is not None:
            z = z + bias.astype(np.float64)  # broadcasts along the last dimension
        with np.errstate(invalid="ignore"):
            unconstrained = ~(np.abs(z) <= _finite_max(x.dtype))
        return {"Y": np.where(unconstrained, np.nan, self.activation(z))}

    def _validate(self, inputs: Mapping[str, np.ndarray | None]) -> tuple[np.ndarray, np.ndarray | None]:
        roles = {"X", "bias"} if self.accepts_bias else {"X"}
        unknown = sorted(k for k, v in inputs.items() if k not in roles and v is not None)
        if unknown:
            raise ValueError(f"{self.op}: unexpected input(s) {unknown}; inputs are {sorted(roles)}")
        if inputs.get("X") is None:
            raise ValueError(f"{self.op}: input 'X' is required")
        x = _float_array(self.op, "X", inputs["X"])
        if x.ndim < self.min_rank:
            raise ValueError(f"{self.op}: X must have rank >= {self.min_rank}, got shape {x.shape}")
        bias = inputs.get("bias")
        if bias is None:
            return x, None
        bias = _float_array(self.op, "bias", bias)
        if bias.dtype != x.dtype:
            raise ValueError(f"{self.op}: bias dtype {bias.dtype} differs from X dtype {x.dtype}")
        if bias.ndim != 1 or x.ndim < 1 or bias.shape[0] != x.shape[-1]:
            raise ValueError(
                f"{self.op}: bias must be 1-D with length X.shape[-1]; got bias shape {bias.shape}, X shape {x.shape}"
            )
        return x, bias


def _float_array(op: str, role: str, value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind != "f":
        raise ValueError(f"{op}: {role} must be a floating-point array, got dtype {arr.dtype}")
    return arr


def _finite_max(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).max)


_REFERENCES = {
    ref.op: ref
    for ref in (
        Reference("com.microsoft.FastGelu", gelu_tanh, accepts_bias=True, min_rank=1),
        Reference("com.microsoft.Gelu", gelu_erf, accepts_bias=False, min_rank=0),
        LayerNormReference(),
        SoftmaxReference(),
        AddReference(),
    )
}


def known_ops() -> list[str]:
    return sorted(_REFERENCES)


def reference_for(domain: str, name: str) -> Reference:
    op = f"{domain}.{name}" if domain else name
    try:
        return _REFERENCES[op]
    except KeyError:
        raise ReferenceNotFound(f"no reference for op {op!r}; known ops: {', '.join(known_ops())}") from None
