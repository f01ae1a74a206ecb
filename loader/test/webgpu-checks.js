// The loader on a real GPUDevice, run as a child of test/webgpu.test.js (never by node --test itself: Dawn for Node
// aborts at the exit of a process node:test ends, so this process ends itself once it has written its answer).
//
//   node test/webgpu-checks.js CASES.json          (Dawn for Node: npm `webgpu`)
//   deno run --unstable-webgpu --import-map M.json --allow-read --allow-env test/webgpu-checks.js CASES.json
//
// CASES.json: [{name, version, inputs: {role: {shape, dtype} | null}, attributes, tunables}], golden calls to run.
// Prints one line "@checks {json}": {runtime, adapter, features, checks: {name: {ok, message?, notes?}}}, or
// {unavailable: why} when this runtime has no WebGPU device. Every check counts what was done (stats()), never time.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { Batch, getKernel } from "../src/index.js";

const IS_DENO = typeof globalThis.Deno !== "undefined";
const SPECS = new URL("../../specs/", import.meta.url);
const argv = IS_DENO ? globalThis.Deno.args : process.argv.slice(2);
const finish = (answer) => {
  console.log(`@checks ${JSON.stringify(answer)}`);
  if (IS_DENO) globalThis.Deno.exit(0); else process.exit(0);
};

// -- the device ------------------------------------------------------------------------------------------------------
const INSTANCES = [];
let ANOTHER = null;   // another adapter like the one the device is of (an adapter makes one device)
async function adapterOf() {
  if (IS_DENO) {
    ANOTHER = () => navigator.gpu.requestAdapter();
    return [await ANOTHER(), "deno"];
  }
  let webgpu;
  try {
    webgpu = await import("webgpu");
  } catch (err) {
    return [null, `no npm package webgpu (Dawn for Node): ${err.message.split("\n")[0]}`];
  }
  Object.assign(globalThis, webgpu.globals);
  // Dawn's default adapter (Vulkan on a GPU machine); else OpenGL ES on llvmpipe in compatibility mode. Every
  // instance made is kept: Dawn for Node crashes when one that gave no adapter is collected during the run.
  for (const [options, featureLevel] of [[[], undefined], [["backend=opengles"], "compatibility"]]) {
    const gpu = webgpu.create(options);
    INSTANCES.push(gpu);
    ANOTHER = () => gpu.requestAdapter(featureLevel ? { featureLevel } : undefined);
    const adapter = await ANOTHER();
    if (adapter) return [adapter, `node ${JSON.stringify(options)}`];
  }
  return [null, "Dawn for Node gave no adapter"];
}

const [adapter, how] = await adapterOf();
if (!adapter) finish({ unavailable: how });
const requiredLimits = {};
for (const key in adapter.limits) {
  if (typeof adapter.limits[key] === "number") requiredLimits[key] = adapter.limits[key];
}
const requiredFeatures = adapter.features.has("shader-f16") ? ["shader-f16"] : [];
const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
const F16 = device.features.has("shader-f16");

// -- packages and data -----------------------------------------------------------------------------------------------
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const SOURCES = new Map();
/** Every published version of an op from ../specs, with metadata.json as `export` writes it. */
function sourceOf(op) {
  if (SOURCES.has(op)) return SOURCES.get(op);
  const versions = {};
  for (let v = 1; existsSync(new URL(`${v === 1 ? op : `${op}@${v}`}/manifest.json`, SPECS)); v++) {
    const dir = new URL(`${v === 1 ? op : `${op}@${v}`}/`, SPECS);
    const manifestBytes = new Uint8Array(readFileSync(new URL("manifest.json", dir)));
    const manifest = JSON.parse(new TextDecoder().decode(manifestBytes));
    const shaders = [...new Set(manifest.variants.flatMap((x) => x.passes.map((p) => p.shader)))].sort();
    const files = { "manifest.json": manifestBytes };
    for (const s of shaders) files[s] = new Uint8Array(readFileSync(new URL(s, dir)));
    const templates = Object.fromEntries(shaders.map((s) => [s, sha256(files[s])]));
    const manifestDigest = { file: "manifest.json", sha256: sha256(manifestBytes) };
    files["metadata.json"] = JSON.stringify({ manifest: manifestDigest, templates });
    versions[v] = files;
  }
  SOURCES.set(op, { versions });
  return SOURCES.get(op);
}
const kernelOf = (name, options = {}) => getKernel(sourceOf(name.replace(/@\d+$/, "")),
                                                   { version: Number((/@(\d+)$/.exec(name) || [0, 1])[1]), device,
                                                     ...options });

const numel = (shape) => shape.reduce((a, b) => a * b, 1);
/** Deterministic data of a dtype: float32 values in [-3, 3); float16 bits of values of magnitude 2^-5 to 2. */
function data(shape, dtype, seed = 0) {
  const n = numel(shape);
  if (dtype === "float16") {
    return Uint16Array.from({ length: n }, (_, i) => {
      const k = i * 7 + seed;
      return ((k & 1) << 15) | ((10 + (k % 7)) << 10) | ((k * 37) & 0x3ff);
    });
  }
  return Float32Array.from({ length: n }, (_, i) => (((i * 7919 + seed * 104729) % 6000) / 1000) - 3);
}
const tensor = (shape, dtype = "float32", seed = 0) => ({ data: data(shape, dtype, seed), shape });
const bytesOf = (t) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const delta = (after, before) => Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));
async function refused(fn) {
  try {
    await fn();
  } catch (e) {
    return [e.name, e.reason ?? null, e.argument ?? null, e.message];
  }
  return ["resolved"];
}

// -- the checks ------------------------------------------------------------------------------------------------------
const checks = {};
/** Each check throws to fail; `notes` go to the test's diagnostics. */
async function check(name, fn) {
  const notes = [];
  try {
    await fn(notes);
    checks[name] = { ok: true, notes };
  } catch (err) {
    checks[name] = { ok: false, message: `${err.name}: ${err.message}`, notes };
  }
}
const expect = (ok, message) => { if (!ok) throw new Error(message); };

const cases = JSON.parse(readFileSync(argv[0], "utf-8"));

await check("golden calls: the same bytes with the cache on and off, read back or left on the GPU", async (notes) => {
  let ran = 0;
  const skipped = [];
  for (const c of cases) {
    if (!F16 && Object.values(c.inputs).some((t) => t && t.dtype === "float16")) { skipped.push(c.id); continue; }
    const on = await kernelOf(c.name);
    const off = await kernelOf(c.name, { cache: false });
    const inputs = Object.fromEntries(Object.entries(c.inputs)
      .map(([r, t], i) => [r, t && tensor(t.shape, t.dtype, i)]));
    const options = { attributes: c.attributes, tunables: c.tunables };
    const [a, b, again] = [await on(inputs, options), await off(inputs, options), await on(inputs, options)];
    const kept = await on(inputs, { ...options, outputs: "gpu-buffer" });
    for (const role of Object.keys(a)) {
      const back = await kept[role].read();
      kept[role].release();
      for (const [what, x] of [["uncached", b], ["repeated", again], ["left on the GPU", { [role]: back }]]) {
        expect(same(bytesOf(a[role]), bytesOf(x[role])) && a[role].dtype === x[role].dtype &&
               JSON.stringify(a[role].shape) === JSON.stringify(x[role].shape),
               `${c.id}: output ${role} ${what} differs`);
      }
    }
    ran++;
  }
  notes.push(`${ran} golden calls` +
             (skipped.length ? `; ${skipped.length} float16 ones skipped (no shader-f16)` : ""));
  expect(ran > 0, "no golden call ran");
});

const FG = { X: tensor([1, 128, 3072]), bias: tensor([3072], "float32", 1) };

await check("a repeated call plans, renders and compiles nothing and takes every buffer from the pool",
            async (notes) => {
  const k = await kernelOf("com.microsoft.FastGelu@2");
  await k(FG);
  let before = await k.stats();
  for (let i = 0; i < 10; i++) await k(FG);
  let d = delta(await k.stats(), before);
  notes.push(`typed arrays, 10 calls: ${JSON.stringify(d)}`);
  expect(d.planned === 0 && d.rendered === 0 && d.compilations === 0 && d.buffersCreated === 0, JSON.stringify(d));
  expect(d.cacheHits === 10 && d.buffersReused === 40 && d.dispatches === 10 && d.submits === 10, JSON.stringify(d));
  // the same on the GPU: an input left there by a call, one the caller made, outputs left there and released
  const X = (await k(FG, { outputs: "gpu-buffer" })).Y;
  const mine = device.createBuffer({ size: 3072 * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(mine, 0, FG.bias.data);
  const bias = { buffer: mine, shape: [3072], dtype: "float32" };
  (await k({ X, bias }, { outputs: "gpu-buffer" })).Y.release();
  before = await k.stats();
  for (let i = 0; i < 10; i++) (await k({ X, bias }, { outputs: "gpu-buffer" })).Y.release();
  d = delta(await k.stats(), before);
  notes.push(`on the GPU, 10 calls: ${JSON.stringify(d)}`);
  expect(d.planned === 0 && d.rendered === 0 && d.compilations === 0 && d.buffersCreated === 0, JSON.stringify(d));
  expect(d.cacheHits === 10 && d.buffersReused === 10 && d.submits === 10, JSON.stringify(d));
  const fromGpu = await k({ X, bias });
  expect(same(bytesOf(fromGpu.Y), bytesOf(await k({ X: await X.read(), bias: FG.bias }).then((o) => o.Y))),
         "inputs on the GPU give other bytes than the same inputs as typed arrays");
  X.release();
  mine.destroy();
});

await check("concurrent first calls of a new signature plan and compile it once", async () => {
  const k = await kernelOf("com.microsoft.Gelu@2");
  const before = await k.stats();
  const X = tensor([3, 4000]);
  const got = await Promise.all([k({ X }), k({ X }), k({ X })]);
  const d = delta(await k.stats(), before);
  expect(d.planned === 1 && d.cacheHits === 2 && d.compilations <= 1 && d.rendered === 1, JSON.stringify(d));
  expect(same(bytesOf(got[0].Y), bytesOf(got[2].Y)), "the answers differ");
});

await check("a chain in one batch: one submission for four calls and the read-back, the bytes of four calls",
            async (notes) => {
              const [ln, gelu, add, softmax] = await Promise.all(["com.microsoft.LayerNormalization@2",
                "com.microsoft.FastGelu@2", "ai.onnx.Add", "com.microsoft.Softmax@2"].map((n) => kernelOf(n)));
              const X = tensor([1, 8, 64]);
              const scale = tensor([64], "float32", 1);
              const beta = tensor([64], "float32", 2);
              const b = tensor([64], "float32", 3);
              const h = (await ln({ X, scale, bias: beta })).Y;
              const g = (await gelu({ X: h, bias: b })).Y;
              const r = (await add({ A: g, B: X })).C;
              const want = (await softmax({ X: r })).Y;
              const before = await ln.stats();
              const batch = new Batch();
              const H = (await ln({ X, scale, bias: beta }, { batch })).Y;
              const G = (await gelu({ X: H, bias: b }, { batch })).Y;
              const R = (await add({ A: G, B: X }, { batch })).C;
              H.release();
              G.release();
              const S = (await softmax({ X: R }, { batch })).Y;
              R.release();
              expect(batch.pending === 4, `${batch.pending} calls pending`);
              const got = await S.read();
              const d = delta(await ln.stats(), before);
              notes.push(JSON.stringify(d));
              expect(d.submits === 1 && d.dispatches === 4 && batch.pending === 0, JSON.stringify(d));
              expect(same(bytesOf(got), bytesOf(want)), "the batch's bytes differ from four calls'");
              S.release();
            });

await check("a GPU buffer input is checked, the error naming the role; nothing is dispatched", async (notes) => {
  const k = await kernelOf("com.microsoft.Gelu@2");
  const small = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
  const noStorage = device.createBuffer({ size: 64, usage: GPUBufferUsage.COPY_DST });
  const y = (await k({ X: tensor([8]) }, { outputs: "gpu-buffer" })).Y;
  const released = (await k({ X: tensor([8]) }, { outputs: "gpu-buffer" })).Y;
  released.release();
  const other = await (await ANOTHER()).requestDevice({ requiredFeatures, requiredLimits });
  const elsewhere = await kernelOf("com.microsoft.Gelu@2", { device: other });
  const before = await k.stats();
  const got = {   // what -> [the refusal, its reason and argument]
    "too small": [() => k({ X: { buffer: small, shape: [8], dtype: "float32" } }), "buffer-size", "X"],
    "no STORAGE usage": [() => k({ X: { buffer: noStorage, shape: [8], dtype: "float32" } }), "buffer-usage", "X"],
    "released": [() => k({ X: released }), "buffer-released", "X"],
    "its buffer, released": [() => k({ X: { buffer: released.buffer, shape: [8], dtype: "float32" } }),
                             "buffer-released", "X"],
    "read after release": [() => released.read(), "buffer-released", "Y"],
    "of another device": [() => elsewhere({ X: y }), "buffer-device", "X"],
    "no dtype": [() => k({ X: { buffer: small, shape: [4] } }), "argument", "X"],
    "not a GPUBuffer": [() => k({ X: { buffer: {}, shape: [4], dtype: "float32" } }), "argument", "X"],
    "a batch that is not one": [() => k({ X: y }, { batch: {} }), "argument", "batch"],
    "outputs neither data nor gpu-buffer": [() => k({ X: y }, { outputs: "cpu" }), "argument", "outputs"],
    "outputs data in a batch": [() => k({ X: y }, { outputs: "data", batch: new Batch() }), "argument", "outputs"],
  };
  for (const [what, [call, reason, argument]] of Object.entries(got)) {
    const [name, r, a, message] = await refused(call);
    notes.push(`${what}: ${message}`);
    expect(name === "ContractError" && r === reason && a === argument,
           `${what}: got ${name} ${r} ${a} (${message}), not ContractError ${reason} ${argument}`);
  }
  const d = delta(await k.stats(), before);
  expect(d.dispatches === 0 && d.submits === 0, `refused calls dispatched: ${JSON.stringify(d)}`);
  expect(same(bytesOf(await y.read()), bytesOf(await k({ X: tensor([8]) }).then((o) => o.Y))), "y");
  y.release();
  other.destroy();
});

await check("nothing the caller holds is reused or changed; released, it is reused", async () => {
  const k = await kernelOf("com.microsoft.Gelu@2");
  const X = (await k({ X: tensor([4096]) }, { outputs: "gpu-buffer" })).Y;
  const held = (await k({ X }, { outputs: "gpu-buffer" })).Y;
  const was = bytesOf(await held.read());
  for (let i = 0; i < 20; i++) {
    const { Y } = await k({ X: i % 2 ? X : { data: data([4096], "float32", i), shape: [4096] } },
                          { outputs: "gpu-buffer" });
    expect(Y.buffer !== held.buffer && Y.buffer !== X.buffer, `call ${i} got a held buffer`);
    Y.release();
  }
  expect(same(bytesOf(await held.read()), was), "a held output changed");
  held.release();
  const after = [];   // the pool hands out the buffer freed longest ago: the released one comes after the free ones
  for (let i = 0; i < 4 && !after.some((t) => t.buffer === held.buffer); i++) {
    after.push((await k({ X }, { outputs: "gpu-buffer" })).Y);
  }
  expect(after.some((t) => t.buffer === held.buffer), "a released buffer is not handed out again");
  for (const t of after) t.release();
  X.release();
});

await check("a buffer released while a batch not yet submitted reads it is not reused before the submission",
            async () => {
              const k = await kernelOf("com.microsoft.Gelu@2");
              const X = tensor([4096]);
              const x = (await k({ X: { data: new Float32Array(4096).fill(0.5), shape: [4096] } },
                                 { outputs: "gpu-buffer" })).Y;
              const batch = new Batch();
              const a = (await k({ X }, { batch })).Y;
              const b = (await k({ X: a }, { batch })).Y;
              a.release();
              const c = (await k({ X: x }, { batch })).Y;
              expect(c.buffer !== a.buffer, "the released buffer was handed out before the batch was submitted");
              await batch.submit();
              const fx = (await k({ X })).Y;
              const ffx = (await k({ X: fx })).Y;
              expect(same(bytesOf(await b.read()), bytesOf(ffx)), "f(f(x)) differs");
              expect(same(bytesOf(await c.read()), bytesOf((await k({ X: x })).Y)), "f(x') differs");
              for (const t of [b, c, x]) t.release();
            });

await check("an output of a batch not yet submitted, given to a call outside it, is written first", async () => {
  const k = await kernelOf("com.microsoft.Gelu@2");
  const X = tensor([4096]);
  const [one, two] = [new Batch(), new Batch()];
  const a = (await k({ X }, { batch: one })).Y;
  const now = await k({ X: a });                      // submitted at once: one is submitted before it
  const b = (await k({ X: a }, { batch: two })).Y;    // recorded into another batch
  expect(one.pending === 0 && two.pending === 1, `pending ${one.pending}, ${two.pending}`);
  const ffx = (await k({ X: (await k({ X })).Y })).Y;
  expect(same(bytesOf(now.Y), bytesOf(ffx)), "the call outside the batch read its input before it was written");
  expect(same(bytesOf(await b.read()), bytesOf(ffx)), "the other batch's call differs");
  for (const t of [a, b]) t.release();
});

await check("signatures are bounded: a dropped one's uniform buffers are destroyed", async (notes) => {
  const k = await kernelOf("com.microsoft.Gelu@2", { cache: { signatures: 2 } });
  const before = await k.stats();
  for (const n of [1024, 2048, 3072, 4096, 5120]) (await k({ X: tensor([n]) }, { outputs: "gpu-buffer" })).Y.release();
  const s = await k.stats();
  const d = delta(s, before);
  notes.push(JSON.stringify(d));
  expect(s.cacheEntries === 2 && d.cacheEvictions === 3 && d.planned === 5, JSON.stringify(d));
  expect(d.buffersDestroyed >= 3, `uniform buffers of dropped signatures: ${d.buffersDestroyed} destroyed`);
});

await check("the pool keeps at most 256 free buffers", async (notes) => {
  const k = await kernelOf("com.microsoft.Gelu@2");
  const X = (await k({ X: tensor([1000]) }, { outputs: "gpu-buffer" })).Y;
  const held = [];
  for (let i = 0; i < 300; i++) held.push((await k({ X }, { outputs: "gpu-buffer" })).Y);
  const before = await k.stats();
  for (const t of held) t.release();
  const s = await k.stats();
  notes.push(`300 released: ${s.buffersFree} free (${s.bytesFree} bytes), ${s.buffersDestroyed -
             before.buffersDestroyed} destroyed`);
  expect(s.buffersFree === 256 && s.buffersDestroyed - before.buffersDestroyed >= 44 + before.buffersFree,
         JSON.stringify(s));
  X.release();
});

await check("an empty output on the GPU is a buffer, read back empty", async () => {
  const k = await kernelOf("com.microsoft.Gelu@2");
  const { Y } = await k({ X: { data: new Float32Array(0), shape: [0, 3] } }, { outputs: "gpu-buffer" });
  const back = await Y.read();
  expect(Y.buffer.size >= 4 && back.data.length === 0 && JSON.stringify(back.shape) === "[0,3]", "not empty");
  Y.release();
});

finish({ runtime: IS_DENO ? `deno ${globalThis.Deno.version.deno}` : `node ${process.versions.node}`, how,
         adapter: adapter.info ? adapter.info.description || adapter.info.device || "" : "",
         features: [...device.features],
         checks });
