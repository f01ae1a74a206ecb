"""The standalone repro of an ONNX Runtime failure: ``repro.py`` (NumPy and onnxruntime only), ``model.onnx`` (the
one-node model the suite ran, byte for byte) and, for larger calls, ``data.npz`` (inputs, expected values,
per-element tolerances).

The script runs the model with the implementation's provider and session config entries, prints the inputs,
what the contract expects and what ONNX Runtime did, and exits 0 when that is what the contract expects, 1 when
the failure reproduces, 2 when it cannot run here (onnxruntime missing, the provider unavailable or unable to run
a smoke model). Expected outputs are the suite's float64 reference, the tolerance plain numbers.
"""

from __future__ import annotations

import io

import numpy as np

from conformance.certify.implementations import NotSupported, Rejected
from conformance.impls.onnxruntime.models import (
    ELEMENT_TYPES,
    SMOKE_X,
    SMOKE_Y,
    mapped_model,
    model_inputs,
    one_node_model,
)
from conformance.ops import record_for

#: Arrays of at most this many elements in all are written into the script; larger calls get ``data.npz``.
INLINE_ELEMENTS = 256


def files(failure, provider: str, config: dict) -> dict[str, bytes]:
    """``repro.py`` first, then ``model.onnx`` (and ``smoke.onnx``, a Gelu of four values, for a provider other than the CPU, ``data.npz``
    for a large call)."""
    mapping = record_for(failure.package).ort
    if mapping is None:
        raise NotSupported(f"{failure.package} has no ONNX Runtime mapping")
    try:  # the same check the implementation made before it ran the call
        present, dtypes = model_inputs(
            "the suite's ONNX adapter", mapping, failure.inputs, ELEMENT_TYPES, "ONNX element type"
        )
    except Rejected as err:
        raise NotSupported(f"{err} (the adapter refused the call, not ONNX Runtime)") from None
    model = mapped_model(mapping, dtypes, failure.attributes or None)
    arrays = {f"input.{r}": failure.inputs[r] for r in present}
    expected = failure.expected
    if expected["outcome"] == "accepted":
        for role, values in expected["outputs"].items():
            arrays[f"expected.{role}"] = np.asarray(values, dtype=np.float64)
        for role, bound in expected["bounds"].items():
            if isinstance(bound["atol"], np.ndarray):
                arrays[f"atol.{role}"] = bound["atol"]
    inline = sum(a.size for a in arrays.values()) <= INLINE_ELEMENTS and all(map(_exact, arrays.values()))
    out = {
        "repro.py": script(failure, provider, config, present, list(mapping.outputs), arrays, inline).encode(),
        "model.onnx": model.SerializeToString(),
    }
    if provider != "CPUExecutionProvider":
        out["smoke.onnx"] = one_node_model("Gelu", "float32", shape=[len(SMOKE_X)]).SerializeToString()
    if not inline:
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        out["data.npz"] = buffer.getvalue()
    return out


def _exact(array: np.ndarray) -> bool:
    """Whether the array's literal (:func:`literal`) gives back its bits (not a NaN with a payload or a sign)."""
    again = np.array([_float(v) for v in array.reshape(-1).tolist()], dtype=array.dtype).reshape(array.shape)
    return again.tobytes() == np.ascontiguousarray(array).tobytes()


def _float(v: float) -> float:
    return float(repr(v)) if v == v else float("nan")


def literal(array: np.ndarray) -> str:
    """``np.array([...], dtype=...).reshape(shape)``: the values as Python floats (nan and inf by name)."""
    values = [
        repr(v) if v == v and abs(v) != float("inf") else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
        for v in array.reshape(-1).tolist()
    ]
    rows = [", ".join(values[i : i + 8]) for i in range(0, len(values), 8)]
    body = ("\n        " + ",\n        ".join(rows) + ",\n    ") if len(rows) > 1 else ", ".join(rows)
    return f"np.array([{body}], dtype={array.dtype.name!r}).reshape({tuple(array.shape)!r})"


def _comment(text: str) -> str:
    """``text`` safe inside one comment line (control characters escaped, no line break)."""
    return repr(str(text))[1:-1]


def script(
    failure, provider: str, config: dict, present: list[str], outputs: list[str], arrays: dict, inline: bool
) -> str:
    expected, observed = failure.expected, failure.observed
    data = (
        ("ARRAYS = {\n" + "".join(f"    {k!r}: {literal(a)},\n" for k, a in arrays.items()) + "}\n")
        if inline
        else 'ARRAYS = dict(np.load(os.path.join(HERE, "data.npz")))\n'
    )
    if expected["outcome"] == "accepted":
        bounds = {
            role: {
                "dtype": b["dtype"],
                "shape": tuple(b["shape"]),
                "atol": None if isinstance(b["atol"], np.ndarray) else float(b["atol"]),
                "rtol": float(b["rtol"]),
            }
            for role, b in expected["bounds"].items()
        }
        contract = (
            f"EXPECTED = {{'outcome': 'accepted', 'outputs': {bounds!r},\n"
            f"            'tolerance': {expected['tolerance']!r}}}\n"
        )
    else:
        contract = f"EXPECTED = {{'outcome': 'rejected', 'reason': {expected['reason']!r}}}\n"
    seen = (
        observed.get("message")
        if observed["outcome"] == "rejected"
        else ", ".join(f"{r} {np.asarray(y).dtype}{list(np.shape(y))}" for r, y in observed["outputs"].items())
    )
    head = "\n".join(
        [
            "#!/usr/bin/env python3",
            f"# Standalone repro: {_comment(failure.verdict)}",
            f"# Case {_comment(failure.case_id)} ({_comment(failure.package)}) of webgpu-kernel-conformance, reduced to",
            "# ONNX Runtime alone: the one-node model.onnx the suite ran, its inputs, and what the op's contract expects",
            "# (float64 reference values with the tolerance as numbers). Needs numpy and onnxruntime"
            + (
                "."
                if provider == "CPUExecutionProvider"
                else f" with {provider} (onnxruntime-webgpu) and a GPU it accepts."
            ),
            "# Run: python repro.py   (exit 0: behaves as the contract expects; 1: the failure reproduces; 2: cannot run)",
            f"# The suite observed: {_comment(observed['outcome'])}: {_comment(seen)}",
            "",
        ]
    )
    return (
        head
        + f"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROVIDER = {provider!r}
SESSION_CONFIG = {dict(config)!r}
INPUTS = {present!r}
OUTPUTS = {outputs!r}
VERDICT = {failure.verdict!r}
SMOKE_X, SMOKE_Y = {SMOKE_X!r}, {SMOKE_Y!r}   # smoke.onnx: Gelu(SMOKE_X) = SMOKE_Y (to 1e-4)
{contract}nan, inf = float("nan"), float("inf")
{data}{_BODY}"""
    )


_BODY = r'''

def session(path):
    import onnxruntime as ort
    ort.set_default_logger_severity(4)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    for key, value in SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(path, options, providers=[PROVIDER])


def cannot_run():
    """Why this machine cannot run the repro, or None."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        return f"onnxruntime is not installed ({exc})"
    if PROVIDER not in ort.get_available_providers():
        return f"onnxruntime {ort.__version__} has no {PROVIDER} (it has {', '.join(ort.get_available_providers())})"
    smoke = os.path.join(HERE, "smoke.onnx")
    if not os.path.exists(smoke):
        return None
    try:   # a provider that is listed may still not start (no GPU it accepts)
        s = session(smoke)
        used = s.get_providers()[0]
        y = s.run(None, {"X": np.array(SMOKE_X, np.float32)})[0] if used == PROVIDER else None
    except Exception as exc:
        return f"{PROVIDER} cannot run a smoke model here: {type(exc).__name__}: {exc}"
    if y is None:
        return f"{PROVIDER} fell back to {used} on a smoke model"
    if not np.allclose(y, SMOKE_Y, atol=1e-4):
        return f"{PROVIDER} gave {y.tolist()} for Gelu({SMOKE_X}): the device is not usable"
    return None


def run():
    """('rejected', message) or ('accepted', {output: array}) as ONNX Runtime answers the call."""
    feeds = {role: ARRAYS["input." + role] for role in INPUTS}
    try:
        s = session(os.path.join(HERE, "model.onnx"))
        if s.get_providers()[0] != PROVIDER:
            return "rejected", f"the session runs on {s.get_providers()[0]}, not {PROVIDER}"
        ys = s.run(None, feeds)
    except Exception as exc:   # onnxruntime's own errors (Fail, InvalidArgument, ...)
        return "rejected", f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    return "accepted", {role: np.asarray(y) for role, y in zip(OUTPUTS, ys)}


def show(array):
    return f"{array.dtype}{list(array.shape)} " + np.array2string(array.reshape(-1), threshold=24, precision=9)


def problems(outputs):
    """What breaks the contract in ONNX Runtime's outputs: shape, dtype, values beyond atol + rtol * |expected|
    (an expected NaN is unconstrained; a NaN or Inf where a finite value is expected fails)."""
    found = []
    for role, want in EXPECTED["outputs"].items():
        got = outputs.get(role)
        if got is None:
            found.append(f"{role}: missing")
            continue
        if got.dtype.name != want["dtype"] or tuple(got.shape) != tuple(want["shape"]):
            found.append(f"{role}: expected {want['dtype']}{list(want['shape'])}, got {got.dtype}{list(got.shape)}")
            continue
        exp = ARRAYS.get("expected." + role)
        if exp is None or exp.size == 0:
            continue
        atol = ARRAYS["atol." + role] if want["atol"] is None else want["atol"]
        allowed = atol + want["rtol"] * np.abs(exp)
        a = got.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(np.isfinite(a), np.abs(a - exp), np.inf)
        bad = ~np.isnan(exp) & ~(err <= allowed)
        if bad.any():
            ratio = np.where(bad, err / np.where(allowed > 0, allowed, np.finfo(np.float64).tiny), 0.0)
            worst = [np.unravel_index(k, exp.shape) for k in np.argsort(-ratio, axis=None, kind="stable")[:5]]
            rows = "; ".join(f"[{','.join(map(str, i))}] expected {exp[i]:.9g} got {a[i]:.9g} allowed "
                             f"{np.broadcast_to(allowed, exp.shape)[i]:.3g}" for i in worst if bad[i])
            found.append(f"{role}: {int(bad.sum())} of {int((~np.isnan(exp)).sum())} elements out of tolerance "
                         f"(worst: {rows})")
    return found


def main():
    why = cannot_run()
    if why:
        print(f"cannot run here: {why}")
        return 2
    import onnxruntime as ort
    print(f"onnxruntime {ort.__version__}, {PROVIDER}, session config {SESSION_CONFIG}")
    for role in INPUTS:
        print(f"input {role}: {show(ARRAYS['input.' + role])}")
    if EXPECTED["outcome"] == "rejected":
        print(f"expected: the call is rejected ({EXPECTED['reason']})")
    else:
        print("expected: the call is accepted, " + ", ".join(f"{r} {w['dtype']}{list(w['shape'])}"
                                                          for r, w in EXPECTED["outputs"].items())
              + f", within {EXPECTED['tolerance']}")
        for role in EXPECTED["outputs"]:
            if "expected." + role in ARRAYS:
                print(f"  {role} (float64 reference): {show(ARRAYS['expected.' + role])}")
    outcome, answer = run()
    if outcome == "rejected":
        print(f"observed: rejected: {answer}")
        broken = EXPECTED["outcome"] == "accepted"
    else:
        print("observed: accepted")
        for role, y in answer.items():
            print(f"  {role}: {show(y)}")
        broken = EXPECTED["outcome"] == "rejected" or bool(problems(answer))
        for line in problems(answer) if EXPECTED["outcome"] == "accepted" else []:
            print(f"  {line}")
    if broken:
        print(f"verdict: REPRODUCED: {VERDICT}")
        return 1
    print("verdict: behaves as the contract expects (the failure does not reproduce)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
