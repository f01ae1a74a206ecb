#!/usr/bin/env python3
# Standalone repro: onnxruntime-webgpu accepts a call the manifest rejects (no-variant: vec4_bias: biasOk is false: dim(shapes.bias, 0) = 1, dim(shapes.X, ranks.X - 1) = 4); it returned Y float32[4] (the values match numpy broadcasting of bias)
# Case FastGelu/f32/X[4]+bias[1]/reject-no-variant (com.microsoft.FastGelu) of webgpu-kernel-conformance, reduced to
# ONNX Runtime alone: the one-node model.onnx the suite ran, its inputs, and what the op's contract expects
# (float64 reference values with the tolerance as numbers). Needs numpy and onnxruntime with WebGpuExecutionProvider (onnxruntime-webgpu) and a GPU it accepts.
# Run: python repro.py   (exit 0: behaves as the contract expects; 1: the failure reproduces; 2: cannot run)
# The suite observed: accepted: Y float32[4]

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROVIDER = "WebGpuExecutionProvider"
SESSION_CONFIG = {"session.disable_cpu_ep_fallback": "1"}
INPUTS = ["X", "bias"]
OUTPUTS = ["Y"]
VERDICT = "onnxruntime-webgpu accepts a call the manifest rejects (no-variant: vec4_bias: biasOk is false: dim(shapes.bias, 0) = 1, dim(shapes.X, ranks.X - 1) = 4); it returned Y float32[4] (the values match numpy broadcasting of bias)"
SMOKE_X, SMOKE_Y = (
    [-1.0, 0.0, 1.0, 2.0],
    [-0.15865526, 0.0, 0.8413447, 1.9544997],
)  # smoke.onnx: Gelu(SMOKE_X) = SMOKE_Y (to 1e-4)
EXPECTED = {
    "outcome": "rejected",
    "reason": "no-variant: vec4_bias: biasOk is false: dim(shapes.bias, 0) = 1, dim(shapes.X, ranks.X - 1) = 4",
}
nan, inf = float("nan"), float("inf")
ARRAYS = {
    "input.X": np.array(
        [-3.5077528953552246, 2.3466906547546387, -4.6801652908325195, 4.379919052124023], dtype="float32"
    ).reshape((4,)),
    "input.bias": np.array([2.3913121223449707], dtype="float32").reshape((1,)),
}


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
    try:  # a provider that is listed may still not start (no GPU it accepts)
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
    except Exception as exc:  # onnxruntime's own errors (Fail, InvalidArgument, ...)
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
            rows = "; ".join(
                f"[{','.join(map(str, i))}] expected {exp[i]:.9g} got {a[i]:.9g} allowed "
                f"{np.broadcast_to(allowed, exp.shape)[i]:.3g}"
                for i in worst
                if bad[i]
            )
            found.append(
                f"{role}: {int(bad.sum())} of {int((~np.isnan(exp)).sum())} elements out of tolerance (worst: {rows})"
            )
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
        print(
            "expected: the call is accepted, "
            + ", ".join(f"{r} {w['dtype']}{list(w['shape'])}" for r, w in EXPECTED["outputs"].items())
            + f", within {EXPECTED['tolerance']}"
        )
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
