// Bad input at the loader's boundary, with no GPU (a device stand-in that only has limits and features: kernel()
// and kernel.plan() check their inputs before touching it). Usage: node boundary.mjs <loader index.js URL>
// <request JSON file>; the request: {"versions": {N: {file: base64}}}. Prints one JSON object: check -> outcome.
import { readFileSync } from "node:fs";

const { getKernel } = await import(process.argv[2]);
const req = JSON.parse(readFileSync(process.argv[3], "utf-8"));
const files = (versions) => ({ versions: Object.fromEntries(Object.entries(versions).map(([v, named]) =>
  [v, Object.fromEntries(Object.entries(named).map(([n, b64]) => [n, new Uint8Array(Buffer.from(b64, "base64"))]))])) });
const device = { limits: req.limits, features: new Set(req.features) };
const outcome = async (fn) => {
  try {
    const value = await fn();
    return { ok: true, value };
  } catch (e) {
    return { name: e.name, reason: e.reason ?? null, argument: e.argument ?? null, message: e.message, file: e.file ?? null };
  }
};
const X = (data, shape) => ({ X: { data, shape } });
const out = {};
const kernel = await getKernel(files(req.versions), { device, version: 1 });
out["plan"] = await outcome(async () => (await kernel.plan(X(new Float32Array(8), [2, 4]))).variant);
out["newest"] = await outcome(async () => (await getKernel(files(req.versions), { device })).version);
out["data-length"] = await outcome(() => kernel(X(new Float32Array(7), [2, 4])));
out["typed-array-kind"] = await outcome(() => kernel(X(new Int32Array(8), [2, 4])));
out["not-a-typed-array"] = await outcome(() => kernel(X([1, 2, 3, 4], [4])));
out["missing-input"] = await outcome(() => kernel({}));
out["unknown-role"] = await outcome(() => kernel({ ...X(new Float32Array(4), [4]), Z: { data: new Float32Array(1), shape: [1] } }));
out["bad-shape"] = await outcome(() => kernel(X(new Float32Array(4), [2, -2])));
out["f16-bits"] = await outcome(async () => (await kernel.plan(X(new Uint16Array(8), [8]))).outputs.Y.dtype);
out["version-missing"] = await outcome(() => getKernel(files(req.versions), { device, version: 3 }));
out["version-not-integer"] = await outcome(() => getKernel(files(req.versions), { device, version: "1" }));
for (const [check, versions] of Object.entries(req.tampered)) {
  out[check] = await outcome(() => getKernel(files(versions), { device, version: 1 }));
}
process.stdout.write(JSON.stringify(out));
