"""ONNX Runtime's kernels for com.microsoft.FastGelu and com.microsoft.Gelu as implementations under test.

``onnxruntime-cpu`` runs the CPU execution provider (PyPI ``onnxruntime``); ``onnxruntime-webgpu`` runs the
WebGPU execution provider (PyPI ``onnxruntime-webgpu``, Dawn inside), which needs a GPU Dawn accepts.

Each call runs a one-node model whose inputs have unknown rank and dimensions, so that one session per
(op, dtype, bias present) serves every shape and every check is ONNX Runtime's own.  Neither reports a variant.
"""

from __future__ import annotations

import numpy as np

from conformance.certify.implementations import ImplResult, NotSupported, Rejected
from conformance.certify.onnx_models import ELEMENT_TYPES, one_node_model, session

#: The ops ONNX Runtime implements, by the package's op id.
OPS = {"com.microsoft.FastGelu": "FastGelu", "com.microsoft.Gelu": "Gelu"}


def _ort():
    import onnxruntime as ort  # optional: loaded on use (onnxruntime or onnxruntime-webgpu)
    ort.set_default_logger_severity(4)
    return ort


class _OrtBase:
    name = "onnxruntime"
    provider = "CPUExecutionProvider"
    has_variants = False
    config: dict = {}

    def __init__(self):
        self._sessions: dict[tuple, object] = {}
        self._ops: dict[str, str] = {}

    # -- Implementation ------------------------------------------------------------------------
    def available(self) -> str | None:
        try:
            ort = _ort()
        except ImportError as exc:
            return f"{self.name}: onnxruntime is not installed ({exc})"
        if self.provider not in ort.get_available_providers():
            return (f"{self.name}: this onnxruntime build ({ort.__version__}) has no {self.provider} "
                    f"(available: {', '.join(ort.get_available_providers())})")
        return None

    def prepare(self, package) -> None:
        op = OPS.get(package.manifest.op_id)  # every version of the op's package runs the same ONNX op
        if op is None:
            raise NotSupported(f"{self.name} implements {', '.join(sorted(OPS))}, not {package.name}")
        self._ops[package.name] = op

    def run(self, case, inputs) -> ImplResult:
        op = self._ops[case.package]
        x = inputs.get("X")
        if x is None:
            raise Rejected(f"{self.name}: {op} needs input X (an ONNX model cannot leave it out)",
                           reason="missing-input", argument="X")
        bias = inputs.get("bias")
        for role, arr in inputs.items():
            if arr is not None and arr.dtype.name not in ELEMENT_TYPES:
                raise Rejected(f"{self.name}: no ONNX element type for {role} dtype {arr.dtype}", reason="dtype",
                               argument=role)
        key = (op, x.dtype.name, None if bias is None else bias.dtype.name)
        sess = self.session_for(key)
        feeds = {"X": x} if bias is None else {"X": x, "bias": bias}
        try:
            y = sess.run(None, feeds)[0]
        except Exception as exc:  # onnxruntime's own errors: Fail, InvalidArgument, ...
            raise Rejected(f"{self.name}: {op} refused the call at run time: {short_error(exc)}",
                           reason="runtime") from None
        return ImplResult({"Y": np.asarray(y)}, extra={"providers": list(sess.get_providers())})

    # -- sessions ------------------------------------------------------------------------------
    def session_for(self, key):
        if key not in self._sessions:
            op, dtype, bias_dtype = key
            try:
                model = one_node_model(op, dtype, with_bias=bias_dtype is not None, bias_dtype=bias_dtype)
                sess = session(model, providers=self._providers(), config=self.config)
                self._check_provider(sess)
                self._sessions[key] = sess
            except Rejected as err:
                self._sessions[key] = err
            except Exception as exc:
                self._sessions[key] = Rejected(
                    f"{self.name}: no session for {op} with X {dtype}"
                    + (f", bias {bias_dtype}" if bias_dtype else "") + f": {short_error(exc)}", reason="model")
        sess = self._sessions[key]
        if isinstance(sess, Exception):
            raise sess
        return sess

    def _providers(self) -> list[str]:
        return [self.provider]

    def _check_provider(self, sess) -> None:
        pass


class OrtCpu(_OrtBase):
    name = "onnxruntime-cpu"
    provider = "CPUExecutionProvider"


class OrtWebGpu(_OrtBase):
    """The WebGPU execution provider; without a GPU that Dawn accepts it is skipped, never run on the CPU."""

    name = "onnxruntime-webgpu"
    provider = "WebGpuExecutionProvider"
    #: A node the WebGPU EP does not take must fail the session, not run on the CPU behind our back.
    config = {"session.disable_cpu_ep_fallback": "1"}

    def available(self) -> str | None:
        reason = super().available()
        if reason:
            return reason + " (install onnxruntime-webgpu in place of onnxruntime)"
        try:  # a provider listed is not a provider that starts: Dawn may reject the adapter (lavapipe)
            sess = session(one_node_model("Gelu", "float32", shape=[4]), providers=self._providers(),
                           config=self.config)
        except Exception as exc:
            return f"{self.name}: {self.provider} could not start a session here: {short_error(exc)}"
        first = sess.get_providers()[0] if sess.get_providers() else None
        if first != self.provider:
            return (f"{self.name}: {self.provider} fell back to {first} here (no GPU that Dawn accepts; "
                    f"lavapipe is rejected); run it on a GPU machine")
        try:
            y = sess.run(None, {"X": np.array([-1.0, 0.0, 1.0, 2.0], np.float32)})[0]
        except Exception as exc:
            return f"{self.name}: {self.provider} failed a smoke run here: {short_error(exc)}"
        if not np.allclose(y, [-0.15865526, 0.0, 0.8413447, 1.9544997], atol=1e-4):
            return f"{self.name}: {self.provider} smoke run gave {y.tolist()}; the device is not usable"
        return None

    def _providers(self) -> list[str]:
        return [self.provider]

    def _check_provider(self, sess) -> None:
        first = sess.get_providers()[0] if sess.get_providers() else None
        if first != self.provider:
            raise Rejected(f"{self.name}: the session runs on {first}, not {self.provider}", reason="provider")


def short_error(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    for marker in ("Status Message: ", "] : "):
        if marker in text:
            text = text.split(marker, 1)[1] if marker == "Status Message: " else text
    return text[:limit]
