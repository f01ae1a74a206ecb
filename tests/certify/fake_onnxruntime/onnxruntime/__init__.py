"""A stand-in for onnxruntime, for tests of the standalone repros only (never on the conformance path).

It computes what the ops' contracts say, in float64 with NumPy, and refuses what they refuse: a repro run with it
on ``PYTHONPATH`` shows what the repro does once the implementation's bug is gone. ``FAKE_ORT_SCALE`` (a float)
multiplies every output, to plant a value bug instead.
"""

import math
import os

import numpy as np
import onnx

__version__ = "0.0-fake"


def get_available_providers():
    return ["CPUExecutionProvider"]


def set_default_logger_severity(level):
    pass


class SessionOptions:
    log_severity_level = 2

    def add_session_config_entry(self, key, value):
        pass


def _fast_gelu(z):
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def _gelu(z):
    return 0.5 * z * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(z / math.sqrt(2.0)))


class InferenceSession:
    def __init__(self, path, options=None, providers=None):
        node = onnx.load(path).graph.node[0]
        self.op = node.op_type
        self.inputs = list(node.input)
        self.attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        self.providers = list(providers or ["CPUExecutionProvider"])

    def get_providers(self):
        return self.providers

    def run(self, output_names, feeds):
        x = feeds[self.inputs[0]]
        z = x.astype(np.float64)
        if self.op in ("FastGelu", "Gelu"):
            bias = feeds.get("bias")
            if bias is not None:
                if x.ndim < 1 or bias.ndim != 1 or bias.shape[0] != x.shape[-1]:
                    raise RuntimeError(f"bias of shape {list(bias.shape)} does not match X {list(x.shape)}")
                z = z + bias.astype(np.float64)
            if x.ndim < 1:
                raise RuntimeError("X must have rank 1 or more")
            y = (_fast_gelu if self.op == "FastGelu" else _gelu)(z)
        elif self.op == "LayerNormalization":
            scale, bias = feeds["scale"], feeds.get("bias")
            cols = x.shape[-1] if x.ndim else 0
            if (
                x.ndim < 1
                or self.attributes.get("axis", -1) not in (-1, x.ndim - 1)
                or scale.shape != (cols,)
                or (bias is not None and bias.shape != (cols,))
            ):
                raise RuntimeError("LayerNormalization: scale and bias must be 1-D of the last axis' length")
            if z.size == 0:
                y = z
            else:
                mean = z.mean(axis=-1, keepdims=True)
                var = ((z - mean) ** 2).mean(axis=-1, keepdims=True)
                y = (z - mean) / np.sqrt(var + float(self.attributes.get("epsilon", 1e-5))) * scale
                y = y + (bias.astype(np.float64) if bias is not None else 0.0)
        else:
            raise RuntimeError(f"the fake onnxruntime does not implement {self.op}")
        return [(y * float(os.environ.get("FAKE_ORT_SCALE", "1"))).astype(x.dtype)]
