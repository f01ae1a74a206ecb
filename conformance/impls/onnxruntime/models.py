"""One-node ONNX models of com.microsoft ops, as ONNX Runtime runs them (shared with the reference cross-check)."""

from __future__ import annotations

import numpy as np

from conformance.certify.implementations import Rejected
from conformance.engine.dtypes import DTYPES

#: ONNX element types by dtype name.
ELEMENT_TYPES = {name: d.onnx for name, d in DTYPES.items()}
#: A smoke run of a provider that may be listed but not start (Dawn refusing the adapter): com.microsoft.Gelu
#: of these four float32 values gives these (to 1e-4).
SMOKE_X, SMOKE_Y = [-1.0, 0.0, 1.0, 2.0], [-0.15865526, 0.0, 0.8413447, 1.9544997]


def one_node_model(
    op: str,
    dtype: str = "float32",
    *,
    with_bias: bool = False,
    shape=None,
    bias_shape=None,
    domain: str = "com.microsoft",
    bias_dtype: str | None = None,
):
    """A checked ModelProto: ``Y = op(X[, bias])`` (opsets '' 17 and com.microsoft 1, IR version 9).

    ``shape``/``bias_shape`` None leaves the rank and dimensions unknown, so that one model (and one session)
    serves every shape: ONNX Runtime's kernel then does all the checking itself.
    """
    import onnx  # optional: only certification through ONNX Runtime needs it
    from onnx import helper  # (see above)

    elem = ELEMENT_TYPES[dtype]
    inputs = [helper.make_tensor_value_info("X", elem, None if shape is None else list(shape))]
    if with_bias:
        inputs.append(
            helper.make_tensor_value_info(
                "bias", ELEMENT_TYPES[bias_dtype or dtype], None if bias_shape is None else list(bias_shape)
            )
        )
    node = helper.make_node(op, [i.name for i in inputs], ["Y"], domain=domain)
    out = helper.make_tensor_value_info("Y", elem, None if shape is None else list(shape))
    graph = helper.make_graph([node], op, inputs, [out])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)], ir_version=9
    )
    if shape is not None and (not with_bias or bias_shape is not None):
        onnx.checker.check_model(model)  # the checker insists on shapes for graph inputs; ORT validates the rest
    return model


def mapped_model(mapping, dtypes: dict, attributes: dict | None = None):
    """A one-node model for an op record's ``OrtMapping``: its inputs in ONNX order, each of the dtype in
    ``dtypes`` (role -> dtype, None for an absent optional input) with unknown rank and dimensions."""
    from onnx import helper  # optional: only certification through ONNX Runtime needs it

    names, values = [], []
    for role in mapping.inputs:
        dtype = dtypes.get(role)
        names.append(role if dtype is not None else "")
        if dtype is not None:
            values.append(helper.make_tensor_value_info(role, ELEMENT_TYPES[dtype], None))
    while names and not names[-1]:
        names.pop()
    first = next(d for d in dtypes.values() if d is not None)
    outputs = [helper.make_tensor_value_info(role, ELEMENT_TYPES[first], None) for role in mapping.outputs]
    attrs = {**dict(mapping.attributes), **dict(attributes or {})}
    node = helper.make_node(mapping.op_type, names, list(mapping.outputs), domain=mapping.domain, **attrs)
    graph = helper.make_graph([node], mapping.op_type, values, outputs)
    opsets = [helper.make_opsetid("", mapping.opset if not mapping.domain else 17)]
    if mapping.domain:
        opsets.append(helper.make_opsetid(mapping.domain, mapping.opset))
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


def session(model, providers=("CPUExecutionProvider",), config: dict | None = None):
    """An InferenceSession for ``model``; ``config`` holds session config entries (``add_session_config_entry``)."""
    import onnxruntime as ort  # optional: loaded on use

    so = ort.SessionOptions()
    so.log_severity_level = 4
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, value)
    return ort.InferenceSession(model.SerializeToString(), so, providers=list(providers))


def as_numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype(dtype)


def model_inputs(impl: str, mapping, inputs: dict, types, type_word: str) -> tuple[list[str], dict]:
    """(the roles fed to the one-node model, role -> dtype name or None for each of the mapping's inputs); Rejected
    for a dtype outside ``types`` (the implementation's ``type_word``) or an absent first input."""
    for role, arr in inputs.items():
        if arr is not None and arr.dtype.name not in types:
            raise Rejected(f"{impl}: no {type_word} for {role} dtype {arr.dtype}", reason="dtype", argument=role)
    present = [r for r in mapping.inputs if inputs.get(r) is not None]
    if mapping.inputs[0] not in present:  # an absent later input is an empty name: ORT says if it may be
        role = mapping.inputs[0]
        raise Rejected(
            f"{impl}: {mapping.op_type} needs input {role} (an ONNX model cannot leave it out)",
            reason="missing-input",
            argument=role,
        )
    return present, {r: (inputs[r].dtype.name if inputs.get(r) is not None else None) for r in mapping.inputs}
