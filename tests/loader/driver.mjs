// Calls the loader's public API on published packages, with no GPU (a device stand-in that only has limits and
// features: kernel.plan() and kernel.render() need no more). The Node side of tests/loader/driver.py.
// Usage: node driver.mjs <loader index.js URL> <request JSON file>; the request:
//   {"limits": {...}, "features": [...], "packages": {name: {N: {file: base64}}},
//    "calls": {label: {"package": name, "method": "plan" | "render", "inputs": {role: {shape, dtype}}, "options": {...}}}}
// Prints one JSON object: label -> {"ok": true, "value": ...} or the error's {name, reason, argument, message, file}.
import { readFileSync } from "node:fs";

const { getKernel } = await import(process.argv[2]);
const req = JSON.parse(readFileSync(process.argv[3], "utf-8"));
const device = { limits: req.limits, features: new Set(req.features) };
const source = (versions) => ({ versions: Object.fromEntries(Object.entries(versions).map(([v, named]) =>
  [v, Object.fromEntries(Object.entries(named).map(([n, b64]) => [n, new Uint8Array(Buffer.from(b64, "base64"))]))])) });
const kernels = new Map();
const kernelOf = async (name) => {
  if (!kernels.has(name)) kernels.set(name, await getKernel(source(req.packages[name]), { device }));
  return kernels.get(name);
};
// render needs data: zeros of each input's shape
const withData = (inputs) => Object.fromEntries(Object.entries(inputs).map(([role, t]) =>
  [role, t && { data: new Float32Array(t.shape.reduce((a, b) => a * b, 1)), shape: t.shape }]));

const out = {};
for (const [label, call] of Object.entries(req.calls)) {
  try {
    const kernel = await kernelOf(call.package);
    const value = call.method === "render"
      ? (await kernel.render(withData(call.inputs), call.options)).map((text) => text.length)
      : (await kernel.plan(call.inputs, call.options)).variant;
    out[label] = { ok: true, value };
  } catch (e) {
    out[label] = { name: e.name, reason: e.reason ?? null, argument: e.argument ?? null, message: e.message, file: e.file ?? null };
  }
}
process.stdout.write(JSON.stringify(out));
