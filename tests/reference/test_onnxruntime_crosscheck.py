"""Independent check: the float32 references agree with ONNX Runtime's CPU
com.microsoft.FastGelu / Gelu within the f32 tolerance, on a few thousand values
spanning the finite f32 range plus normal data.

Every element where ORT's output is finite is checked; see README.md for what
ORT does elsewhere.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from reference import compare, reference_for


def _session(name: str, with_bias: bool, shape: tuple[int, ...]) -> ort.InferenceSession:
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(shape))]
    if with_bias:
        inputs.append(helper.make_tensor_value_info("bias", TensorProto.FLOAT, [shape[-1]]))
    node = helper.make_node(name, [i.name for i in inputs], ["Y"], domain="com.microsoft")
    graph = helper.make_graph(
        [node], name, inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(shape))]
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)], ir_version=9
    )
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _data() -> tuple[np.ndarray, np.ndarray]:
    mags = np.logspace(-45, np.log10(3e38), 1536).astype(np.float32)
    rng = np.random.default_rng(7)
    x = np.concatenate([mags, -mags, rng.normal(0, 2, 1024).astype(np.float32)]).reshape(-1, 32)
    return x, rng.normal(0, 1, 32).astype(np.float32)


def _check(name: str, feeds: dict[str, np.ndarray]):
    ref = reference_for("com.microsoft", name)
    got = _session(name, "bias" in feeds, feeds["X"].shape).run(None, feeds)[0]
    expected = ref.compute(feeds)["Y"]
    finite = np.isfinite(got)
    z = feeds["X"] + feeds.get("bias", 0)
    result = compare(got[finite], expected[finite], ref.tolerance("float32"), inputs=z[finite])
    assert result.passed, result.message()
    return got, finite, result


def test_ort_gelu_matches_reference():
    x, _ = _data()
    got, finite, result = _check("Gelu", {"X": x})
    assert finite.all()
    assert result.checked == x.size


def test_ort_fastgelu_without_bias_matches_reference():
    x, _ = _data()
    got, finite, _ = _check("FastGelu", {"X": x})
    assert finite.all()


def test_ort_fastgelu_with_bias_matches_reference():
    x, bias = _data()
    got, finite, _ = _check("FastGelu", {"X": x, "bias": bias})
    assert finite.all()
