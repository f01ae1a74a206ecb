"""ONNX Runtime's kernels as implementations under test, for every op whose record has an ORT mapping.

``onnxruntime-cpu`` runs the CPU execution provider (PyPI ``onnxruntime``); ``onnxruntime-webgpu`` runs the
WebGPU execution provider (PyPI ``onnxruntime-webgpu``, Dawn inside), which needs a GPU Dawn accepts.

Each call runs a one-node model (the record's ``OrtMapping``: op type, domain, attributes, input order) whose
inputs have unknown rank and dimensions, so that one session per (op, input dtypes and presence) serves every
shape and every check is ONNX Runtime's own.  Neither reports a variant.
"""

from __future__ import annotations

import numpy as np

from conformance.certify.implementations import ImplResult, NotSupported, Rejected
from conformance.impls.onnxruntime.models import (
    ELEMENT_TYPES,
    SMOKE_X,
    SMOKE_Y,
    mapped_model,
    model_inputs,
    one_node_model,
    session,
)
from conformance.impls.onnxruntime.repro import files as repro_files
from conformance.ops import known_ops, record_for


def ort_ops() -> dict[str, str]:
    """The ops ONNX Runtime implements (their records have an ORT mapping): op id -> ONNX op type."""
    return {op: record_for(op).ort.op_type for op in known_ops() if record_for(op).ort is not None}


def session_key(op: str, dtypes: dict, attributes: dict | None = None) -> tuple:
    """The session cache key for ``op`` with ``dtypes`` (role -> dtype, None or left out when absent) and the
    call's attributes (a node attribute is part of the model)."""
    key = (op, tuple(sorted((r, d) for r, d in dtypes.items() if d is not None)))
    return key + (tuple(sorted(attributes.items())),) if attributes else key


def ort_op_type(impl: str, package) -> str:
    """The ONNX op type that runs ``package`` (every version of an op runs the same one); NotSupported for an op
    whose record has no ORT mapping."""
    ops = ort_ops()
    op = package.manifest.op_id
    if op not in ops:
        raise NotSupported(
            f"{impl} implements {', '.join(sorted(ops))} (the op records with an ORT mapping), not {package.name}"
        )
    return ops[op]


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
            return (
                f"{self.name}: this onnxruntime build ({ort.__version__}) has no {self.provider} "
                f"(available: {', '.join(ort.get_available_providers())})"
            )
        return None

    def prepare(self, package) -> None:
        self._ops[package.name] = ort_op_type(self.name, package)

    def run(self, case, inputs) -> ImplResult:
        mapping = record_for(case.package).ort
        op = mapping.op_type
        present, dtypes = model_inputs(self.name, mapping, inputs, ELEMENT_TYPES, "ONNX element type")
        sess = self.session_for(session_key(case.package, dtypes, dict(case.attributes)))
        try:
            ys = sess.run(None, {r: inputs[r] for r in present})
        except Exception as exc:  # onnxruntime's own errors: Fail, InvalidArgument, ...
            raise Rejected(
                f"{self.name}: {op} refused the call at run time: {short_error(exc)}", reason="runtime"
            ) from None
        return ImplResult(
            {role: np.asarray(y) for role, y in zip(mapping.outputs, ys)},
            extra={"providers": list(sess.get_providers())},
        )

    def repro_files(self, failure) -> dict[str, bytes]:
        """A standalone repro of ``failure`` (:class:`conformance.certify.repro.collect.Failure`): a script that runs the
        same model with this provider and session config, alone (:mod:`conformance.impls.onnxruntime.repro`)."""
        return repro_files(failure, self.provider, self.config)

    # -- sessions ------------------------------------------------------------------------------
    def session_for(self, key):
        """The session for ``key`` (:func:`session_key`), made once; a model ORT refuses is a Rejected."""
        if key not in self._sessions:
            op, dtypes, *attributes = key
            dtypes = dict(dtypes)
            try:
                model = mapped_model(record_for(op).ort, dtypes, dict(attributes[0]) if attributes else None)
                sess = session(model, providers=self._providers(), config=self.config)
                self._check_provider(sess)
                self._sessions[key] = sess
            except Rejected as err:
                self._sessions[key] = err
            except Exception as exc:
                shown = ", ".join(f"{r} {d}" for r, d in dtypes.items() if d)
                self._sessions[key] = Rejected(
                    f"{self.name}: no session for {op} with {shown}: {short_error(exc)}", reason="model"
                )
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
            sess = session(
                one_node_model("Gelu", "float32", shape=[4]), providers=self._providers(), config=self.config
            )
        except Exception as exc:
            return f"{self.name}: {self.provider} could not start a session here: {short_error(exc)}"
        first = sess.get_providers()[0] if sess.get_providers() else None
        if first != self.provider:
            return (
                f"{self.name}: {self.provider} fell back to {first} here (no GPU that Dawn accepts; "
                f"lavapipe is rejected); run it on a GPU machine"
            )
        try:
            y = sess.run(None, {"X": np.array(SMOKE_X, np.float32)})[0]
        except Exception as exc:
            return f"{self.name}: {self.provider} failed a smoke run here: {short_error(exc)}"
        if not np.allclose(y, SMOKE_Y, atol=1e-4):
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
