"""One-node ONNX models of com.microsoft ops, as ONNX Runtime runs them (shared with the reference cross-check)."""

from __future__ import annotations

import numpy as np

from conformance.engine.dtypes import DTYPES

#: ONNX element types by dtype name.
ELEMENT_TYPES = {name: d.onnx for name, d in DTYPES.items()}


def one_node_model(op: str, dtype: str = "float32", *, with_bias: bool = False, shape=None, bias_shape=None,
                   domain: str = "com.microsoft", bias_dtype: str | None = None):
    """A checked ModelProto: ``Y = op(X[, bias])`` (opsets '' 17 and com.microsoft 1, IR version 9).

    ``shape``/``bias_shape`` None leaves the rank and dimensions unknown, so that one model (and one session)
    serves every shape: ONNX Runtime's kernel then does all the checking itself.
    """
    import onnx  # optional: only certification through ONNX Runtime needs it
    from onnx import helper  # (see above)
    elem = ELEMENT_TYPES[dtype]
    inputs = [helper.make_tensor_value_info("X", elem, None if shape is None else list(shape))]
    if with_bias:
        inputs.append(helper.make_tensor_value_info("bias", ELEMENT_TYPES[bias_dtype or dtype],
                                                    None if bias_shape is None else list(bias_shape)))
    node = helper.make_node(op, [i.name for i in inputs], ["Y"], domain=domain)
    out = helper.make_tensor_value_info("Y", elem, None if shape is None else list(shape))
    graph = helper.make_graph([node], op, inputs, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)],
                              ir_version=9)
    if shape is not None and (not with_bias or bias_shape is not None):
        onnx.checker.check_model(model)  # the checker insists on shapes for graph inputs; ORT validates the rest
    return model


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
