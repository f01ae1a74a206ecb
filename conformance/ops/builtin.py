"""The records of the packages under ``specs/``: FastGelu, Gelu, LayerNormalization, Softmax, Add.

The math (references, tolerance models) lives in ``reference/``; this module says, per op, what the rest of the
suite needs besides: data, ONNX Runtime mapping, PyTorch peer, message words.
"""

from __future__ import annotations

import numpy as np

from conformance.ops.record import DataRecipe, OpRecord, OrtMapping
from reference import reference_for


def _compute(ref):
    return lambda inputs, attributes=None: ref.compute(inputs, attributes)


def _tolerance(ref):
    return lambda dtype, inputs=None, attributes=None: ref.tolerance(dtype, inputs=inputs, attributes=attributes)


# -- GELU ---------------------------------------------------------------------------------------------------
def _gelu_interpret(ref):
    """For a bias the manifest rejects: how the implementation seems to have used it."""

    def interpret(inputs, outputs) -> str:
        x, bias, y = inputs.get("X"), inputs.get("bias"), outputs.get("Y")
        if x is None or y is None or y.size == 0:
            return ""
        z = x.astype(np.float64)
        if bias is not None and bias.size:
            guesses = {
                "numpy broadcasting of bias": lambda: z + bias.astype(np.float64),
                "bias indexed modulo its length": lambda: (
                    z + np.resize(bias.astype(np.float64).ravel(), z.shape[-1] if z.ndim else 1)
                ),
            }
        else:
            guesses = {"bias ignored": lambda: z}
        for name, make in guesses.items():
            try:
                want = ref.activation(make())
            except ValueError:
                continue
            if want.shape == y.shape and np.allclose(y.astype(np.float64), want, rtol=2e-3, atol=2e-3, equal_nan=True):
                return f" (the values match {name})"
        return ""

    return interpret


def _gelu_peer(approximate: str):
    def peer(t, attributes=None):
        import torch.nn.functional as F  # optional peer: loaded on use (bench --peers)

        x, b = t["X"], t.get("bias")
        what = "x + b" if b is not None else "x"
        name = f"torch gelu({what}, tanh)" if approximate == "tanh" else f"torch gelu({what}) exact"
        if b is None:
            return (lambda: F.gelu(x, approximate=approximate)), name
        return (lambda: F.gelu(x + b, approximate=approximate)), name  # the add is part of what is timed

    return peer


def _gelu(name: str, with_bias: bool, approximate: str) -> OpRecord:
    ref = reference_for("com.microsoft", name)
    roles = ("X", "bias") if with_bias else ("X",)
    return OpRecord(
        f"com.microsoft.{name}",
        roles,
        ("Y",),
        _compute(ref),
        _tolerance(ref),
        ort=OrtMapping(name, roles, ("Y",), domain="com.microsoft", opset=1),
        torch_peer=_gelu_peer(approximate),
        activation="intermediate",
        words={"unconstrained": "non-finite x+bias" if with_bias else "non-finite x"},
        interpret=_gelu_interpret(ref),
    )


# -- LayerNormalization -----------------------------------------------------------------------------------
def _offset_rows(rng, shape, dtype, scale):
    """Rows of N(m, 1) with m = +-``scale``, the sign alternating row by row: |mean| / sigma up to ``scale``, and
    neighbouring rows far apart (a kernel that reads its neighbour's elements cannot hide in shift invariance)."""
    shape = tuple(shape)
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    signs = np.where(np.arange(rows) % 2 == 0, -1.0, 1.0)
    if not shape:
        return np.asarray(scale * signs[0] + rng.standard_normal())
    x = rng.standard_normal(shape).reshape(rows, -1) + (scale * signs)[:, None]
    return x.reshape(shape)


def _layernorm_tolerance_parameters(ref):
    def params(dtype, inputs, attributes=None):
        return {"model": "reference/layernorm.py", "epsilon": float(dict(attributes or {}).get("epsilon", 1e-5))}

    return params


def _layernorm_peer(t, attributes=None):
    import torch.nn.functional as F  # optional peer: loaded on use (bench --peers)

    eps = float(dict(attributes or {}).get("epsilon", 1e-5))
    x = t["X"]
    return (lambda: F.layer_norm(x, x.shape[-1:], t["scale"], t.get("bias"), eps)), "torch layer_norm"


def _layernorm() -> OpRecord:
    ref = reference_for("com.microsoft", "LayerNormalization")
    return OpRecord(
        "com.microsoft.LayerNormalization",
        ("X", "scale", "bias"),
        ("Y",),
        _compute(ref),
        _tolerance(ref),
        structure="rows",
        data=(
            DataRecipe(
                "ln-offset",
                _offset_rows,
                (1e2, 1e4),
                ("X",),
                "rows with |mean| / sigma of 1e2 and 1e4: E[x^2] - mean^2 loses the variance",
            ),
        ),
        ort=OrtMapping("LayerNormalization", ("X", "scale", "bias"), ("Y",), attributes={"axis": -1}, opset=17),
        torch_peer=_layernorm_peer,
        activation="hidden",
        words={"unconstrained": "rows with a non-finite value or an f32 overflow"},
        tolerance_parameters=_layernorm_tolerance_parameters(ref),
    )


# -- Softmax ----------------------------------------------------------------------------------------------
def _spike_rows(rng, shape, dtype, scale):
    """N(0, 1) rows whose first element is ``scale``: the row maximum sits in one slot of the reduction, so a
    maximum read from the wrong slot leaves exp(x - m) to overflow."""
    x = rng.standard_normal(tuple(shape))
    if x.ndim:
        x[..., 0] = scale
    return x


def _softmax_peer(t, attributes=None):
    import torch  # optional peer: loaded on use (bench --peers)

    return (lambda: torch.softmax(t["X"], dim=-1)), "torch softmax"


def _softmax() -> OpRecord:
    ref = reference_for("com.microsoft", "Softmax")
    return OpRecord(
        "com.microsoft.Softmax",
        ("X",),
        ("Y",),
        _compute(ref),
        _tolerance(ref),
        structure="rows",
        data=(
            DataRecipe(
                "sm-offset",
                _offset_rows,
                (1e2, 1e3),
                ("X",),
                "rows around +-1e2 and +-1e3: exp overflows unless the row maximum is subtracted",
            ),
            DataRecipe(
                "sm-spread",
                lambda rng, shape, dtype, scale: rng.uniform(-scale, scale, shape),
                (60.0,),
                ("X",),
                "a wide range in each row: exp arguments down to -120, flushed terms",
            ),
            DataRecipe(
                "sm-spike",
                _spike_rows,
                (100.0,),
                ("X",),
                "one element of 100 per row: exp(x - m) overflows unless m is the row's true maximum",
            ),
        ),
        ort=OrtMapping("Softmax", ("X",), ("Y",), attributes={"axis": -1}, opset=13),
        torch_peer=_softmax_peer,
        activation="attention",
        words={"unconstrained": "rows with a non-finite value"},
        tolerance_parameters=lambda dtype, inputs, attributes=None: {"model": "reference/softmax.py"},
    )


# -- Add --------------------------------------------------------------------------------------------------
def _add_peer(t, attributes=None):
    return (lambda: t["A"] + t["B"]), "torch a + b"


def _add() -> OpRecord:
    ref = reference_for("ai.onnx", "Add")
    return OpRecord(
        "ai.onnx.Add",
        ("A", "B"),
        ("C",),
        _compute(ref),
        _tolerance(ref),
        ort=OrtMapping("Add", ("A", "B"), ("C",), opset=14),
        torch_peer=_add_peer,
        activation="hidden",  # the residual add
        words={"unconstrained": "non-finite or overflowing A + B"},
    )


RECORDS = (
    _gelu("FastGelu", True, "tanh"),
    _gelu("Gelu", False, "none"),
    _layernorm(),
    _softmax(),
    _add(),
)
