"""A standalone repro of an ONNX Runtime Web failure: ``index.html``, ``model.onnx``, ``case.json``, ``README.md``.

The page uses ONNX Runtime Web alone (not this suite): it loads the bundle of the provider under test from
``./ort/`` beside it, or from the directory ``?ort=<URL>`` names (ORT Web's ``dist/``), makes the session as the
suite does (that provider only, CPU fallback disabled, one thread), runs the inputs of ``case.json`` and compares
with the expected outcome there: a rejection, or outputs within per-element allowed errors (NaN: unconstrained).
It prints expected and observed and the suite's verdict line, and sets ``document.title`` to ``PASS``,
``FAIL: <why>`` or, in a browser that offers no WebGPU, ``CANNOT RUN HERE: <why>`` with how to turn it on
(``window.reproResult`` holds the same as an object) for a machine to read.
"""

from __future__ import annotations

import base64
import html
import json

import numpy as np

from conformance.gpu.backends.enable_webgpu import how_to_enable
from conformance.impls.onnxruntime.models import mapped_model
from conformance.ops import record_for

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>running</title>
<h1>__TITLE__</h1>
<p>ONNX Runtime Web (<code>__BUNDLE__</code>, provider <code>webgpu</code> = __PROVIDER__), CPU fallback disabled.
Reported by webgpu-kernel-conformance as: <b>__VERDICT__</b></p>
<pre id="out">running...</pre>
<script type="module">
const out = document.getElementById("out");
const say = (line) => { out.textContent = (out.textContent === "running..." ? "" : out.textContent + "\\n") + line; };
const finish = (pass, why) => {
  window.reproResult = { pass, why };
  document.title = pass ? "PASS" : `FAIL: ${why}`;
  say(pass ? "PASS" : `FAIL: ${why}`);
};
// Neither PASS nor FAIL: this browser has no WebGPU, so the repro says nothing about ORT Web here.
const ENABLE = __ENABLE_JSON__;
const cannotRun = (why) => {
  const text = `CANNOT RUN HERE: this browser offers no WebGPU (${why}); to turn it on: ${ENABLE}`;
  window.reproResult = { pass: null, cannotRun: true, why };
  document.title = text;
  say(text);
};
async function missingWebGPU() {
  if (!navigator.gpu) return "no navigator.gpu";
  return await navigator.gpu.requestAdapter() ? null : "navigator.gpu.requestAdapter() returned null";
}
const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const ARRAYS = { float32: Float32Array, float16: Uint16Array, int32: Int32Array, int64: BigInt64Array,
                 uint8: Uint8Array, int8: Int8Array, bool: Uint8Array, float64: Float64Array };
function half(h) {   // IEEE binary16 bits -> number
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}
const numbers = (t) => t.type === "float16" && t.data instanceof Uint16Array ? Array.from(t.data, half)
                                                                           : Array.from(t.data, Number);
const value = (v) => v === null ? NaN : v === "inf" ? Infinity : v === "-inf" ? -Infinity : v;
const preview = (xs) => "[" + xs.slice(0, 8).map((x) => String(x)).join(", ") + (xs.length > 8 ? ", ..." : "") + "]";
try {
  const c = await (await fetch("case.json")).json();
  const base = new URL(new URLSearchParams(location.search).get("ort") || "./ort/", location.href).href;
  const ort = await import(base + c.bundle);
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = base;
  say(`onnxruntime-web ${ort.env.versions ? ort.env.versions.web : "?"} from ${base}`);
  say(`case ${c.case_id} (${c.package}), ${c.kind}`);
  for (const [name, t] of Object.entries(c.inputs)) say(`input ${name}: ${t.dtype}[${t.dims}]`);
  say(`expected: ${c.expected.outcome}${c.expected.reason ? " (" + c.expected.reason + ")" : ""}`);
  if (c.observed_in_suite) say(`observed in the suite: ${c.observed_in_suite}`);
  const missing = await missingWebGPU();
  let got, error;
  try {
    const model = new Uint8Array(await (await fetch("model.onnx")).arrayBuffer());
    const session = await ort.InferenceSession.create(model, { executionProviders: ["webgpu"],
      extra: { session: { disable_cpu_ep_fallback: "1" } } });
    const feeds = {};
    for (const [name, t] of Object.entries(c.inputs)) {
      const u8 = bytes(t.b64), A = ARRAYS[t.dtype];
      feeds[name] = new ort.Tensor(t.dtype, new A(u8.buffer, 0, u8.byteLength / A.BYTES_PER_ELEMENT), t.dims);
    }
    got = await session.run(feeds);
  } catch (e) { error = e && e.message ? e.message : String(e); }
  if (missing || (error !== undefined && /no available backend found/.test(error))) {
    cannotRun(missing || error);
  } else if (c.expected.outcome === "rejected") {
    if (error !== undefined) { say(`observed: rejected: ${error}`); finish(true, ""); }
    else {
      const shapes = Object.entries(got).map(([n, t]) => `${n} ${t.type}[${t.dims}] = ${preview(numbers(t))}`);
      say(`observed: accepted, ${shapes.join("; ")}`);
      finish(false, `accepts a call that must be rejected (${c.expected.reason})`);
    }
  } else if (error !== undefined) {
    say(`observed: rejected: ${error}`);
    finish(false, `rejects a call that must be accepted: ${error}`);
  } else {
    const problems = [];
    for (const [name, want] of Object.entries(c.expected.outputs)) {
      const t = got[name];
      if (!t) { problems.push(`no output ${name}`); continue; }
      if (String(t.dims) !== String(want.dims)) { problems.push(`${name}: shape [${t.dims}], expected [${want.dims}]`); continue; }
      const ys = numbers(t), es = want.values.map(value);
      let bad = 0, first = null;
      for (let i = 0; i < es.length; i++) {
        const e = es[i], y = ys[i], ok = Number.isNaN(e) || (Number.isFinite(e) ? Math.abs(y - e) <= want.allowed[i]
                                                                                  : y === e);
        if (!ok) { bad++; if (first === null) first = i; }
      }
      say(`${name}: expected ${preview(es)}`);
      say(`${name}: observed ${preview(ys)}`);
      if (bad) problems.push(`${name}: ${bad} of ${es.length} elements outside the allowed error (first: element ` +
                             `${first}, expected ${es[first]}, observed ${ys[first]}, allowed ${want.allowed[first]})`);
    }
    finish(problems.length === 0, problems.join("; "));
  }
} catch (e) { finish(false, `the repro itself failed: ${e && e.message ? e.message : e}`); }
</script>
"""

README = """# Repro: __CASE__ (__PROVIDER__ in ONNX Runtime Web)

__VERDICT__

Self-contained: `index.html` runs `model.onnx` (one __OP__ node) on the inputs of `case.json` with ONNX Runtime
Web alone (`__BUNDLE__`, executionProviders `["webgpu"]`, `extra.session.disable_cpu_ep_fallback = "1"`), and
compares with the expected outcome stored there (outputs: per-element allowed absolute errors; NaN unconstrained).

Run it from any local HTTP server (module scripts and WebAssembly do not load from file://), with ORT Web's
`dist/` directory (npm `onnxruntime-web`) either copied or linked as `ort/` beside the page, or named by URL:

    ln -s /path/to/node_modules/onnxruntime-web/dist ort
    python3 -m http.server 8000 --bind 127.0.0.1
    # open http://127.0.0.1:8000/index.html (or index.html?ort=http://127.0.0.1:9000/dist/)

WebGPU must be on in the browser: __ENABLE__. The page's title becomes `PASS`, `FAIL: <why>` (the failure
reproduces) or `CANNOT RUN HERE: <why>` (this browser offers no WebGPU: the repro says nothing here);
`window.reproResult` = `{pass, why}` (`pass` null and `cannotRun` true for the last).
"""


def _values(arr: np.ndarray) -> list:
    """Float64 values for JSON: NaN as null, infinities as "inf" / "-inf"."""
    flat = np.asarray(arr, dtype=np.float64).ravel()
    return [None if np.isnan(v) else ("inf" if v > 0 else "-inf") if np.isinf(v) else float(v) for v in flat]


def _tensor(arr: np.ndarray) -> dict:
    arr = np.ascontiguousarray(arr)
    return {"dtype": arr.dtype.name, "dims": list(arr.shape), "b64": base64.b64encode(arr.tobytes()).decode()}


def _allowed(failure, record, inputs, role: str, want: np.ndarray) -> np.ndarray:
    """Each element's allowed absolute error: the failure's own bounds (``expected["bounds"]``, the suite's
    tolerance as numbers), else the op record's tolerance for the call."""
    bound = (failure.expected.get("bounds") or {}).get(role)
    if bound is not None:
        allowed = np.asarray(bound["atol"], dtype=np.float64) + float(bound["rtol"]) * np.abs(want)
    else:
        dtype = record.reference_dtype(inputs) or "float32"
        allowed = record.tolerance_for(dtype, inputs, failure.attributes or None).allowed(want)
    return np.broadcast_to(allowed, want.shape)


def _expected(failure, record, inputs) -> dict:
    expected = failure.expected
    if expected.get("outcome") != "accepted":
        return {"outcome": "rejected", "reason": str(expected.get("reason", ""))}
    outputs = {}
    for role, want in (expected.get("outputs") or {}).items():
        want = np.asarray(want, dtype=np.float64)
        allowed = _allowed(failure, record, inputs, role, want)
        outputs[role] = {"dims": list(want.shape), "values": _values(want), "allowed": _values(allowed)}
    return {"outcome": "accepted", "outputs": outputs, "tolerance": str(expected.get("tolerance", ""))}


def _observed(failure) -> str:
    observed = failure.observed or {}
    if observed.get("outcome") == "rejected":
        return f"rejected: {observed.get('message', '')}"[:2000]
    parts = []
    for role, y in (observed.get("outputs") or {}).items():
        y = np.asarray(y)
        parts.append(f"{role} {y.dtype}{list(y.shape)} = {np.asarray(y, np.float64).ravel()[:8].tolist()}")
    return "accepted: " + "; ".join(parts)


def repro_files(impl, failure) -> dict[str, bytes]:
    """``index.html`` first (the file to open), then the model, the case and how to run it."""
    record = record_for(failure.package)
    mapping = record.ort
    inputs = {r: a for r, a in failure.inputs.items() if a is not None}
    dtypes = {r: (failure.inputs[r].dtype.name if failure.inputs.get(r) is not None else None) for r in mapping.inputs}
    model = mapped_model(mapping, dtypes, dict(failure.attributes or {}) or None).SerializeToString()
    case = {
        "case_id": failure.case_id,
        "package": failure.package,
        "kind": failure.kind,
        "verdict": failure.verdict,
        "bundle": impl.bundle,
        "provider": impl.provider,
        "inputs": {r: _tensor(a) for r, a in inputs.items() if r in mapping.inputs},
        "expected": _expected(failure, record, failure.inputs),
        "observed_in_suite": _observed(failure),
    }
    words = {
        "__TITLE__": f"{failure.case_id}: {failure.kind}",
        "__BUNDLE__": impl.bundle,
        "__PROVIDER__": impl.provider,
        "__VERDICT__": failure.verdict,
        "__CASE__": failure.case_id,
        "__OP__": mapping.op_type,
        "__ENABLE__": how_to_enable(),
    }
    page = PAGE.replace("__ENABLE_JSON__", json.dumps(how_to_enable()).replace("</", "<\\/"))
    readme = README
    for key, text in words.items():
        page = page.replace(key, html.escape(str(text)))
        readme = readme.replace(key, str(text))
    return {
        "index.html": page.encode(),
        "model.onnx": model,
        "case.json": json.dumps(case).encode(),
        "README.md": readme.encode(),
    }
