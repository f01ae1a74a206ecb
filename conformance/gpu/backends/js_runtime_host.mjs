// The host of a JavaScript loader outside browsers: runs under Node (WebGPU from Dawn for Node, npm `webgpu`) or
// Deno (`deno run --unstable-webgpu`, whose WebGPU is wgpu), obtains one GPUDevice, imports a loader module and
// answers requests read from stdin, one JSON object a line. It calls the loader exactly as page_loader.mjs does in
// the page (getKernel with every published version's files, kernel.plan, kernel(), kernel.stats()) and encodes what
// the loader returned the same way, so js_runtime.py (the Python driver that starts this) decodes it as the page's.
//
//   node js_runtime_host.mjs --webgpu node_modules/webgpu/index.js --jinja .../jinja/dist/index.js [--loader M.js]
//        [--dawn-option backend=opengles ...] [--feature-level compatibility] [--scratch DIR]
//   deno run --unstable-webgpu --no-config --no-remote --no-npm --import-map MAP.json --allow-read=... \
//        js_runtime_host.mjs [--loader M.js] [--scratch DIR]
//
// Requests (one JSON object a line; `id` is echoed):
//   {id, op: "device"}                      -> {id, device: {runtime, runtimeVersion, webgpu, adapter: {vendor,
//                                              architecture, device, description, isFallbackAdapter}, featureLevel,
//                                              dawnOptions, adapterFeatures, features, limits, float16Array}}
//   {id, op: "kernel", key, versions: {N: {file name: ref}}, version, module?}  -> {id, ok: true} | {id, error}
//   {id, op: "run", key, inputs: {role: [dtype, shape, ref | null] | null}, options: {attributes, tunables, limits,
//    features}, planOnly}                   -> {id, plan?, rejected?, outputs?: {role: [dtype, shape, ref]}, error?,
//                                              runRejected?, ms: {plan, run}, stats?, lost?}
//   {id, op: "release", keys: [key, ...]}   -> {id, ok: true}
//   {id, op: "exit"}                        -> {id, ok: true}, then the process exits
// A ref is {b64: "..."} or {file: "name"} (a plain file name in --scratch, for large data both ways). An error is
// {name, message, reason, argument, failures} (a ContractError's fields, as the page sends them). Every answer line
// starts with "@jsrt " so that anything else a runtime or a native library prints to stdout is not taken for one.
import { Buffer } from "node:buffer";
import { readFileSync, writeFileSync } from "node:fs";

const MARK = "@jsrt ";
const BACKSTOP_MS = 20000;        // a loader call that has not settled by then hangs (the page's backstop too)
const INLINE_LIMIT = 128 * 1024;  // larger outputs go through --scratch files when there is one
const IS_DENO = typeof globalThis.Deno !== "undefined";
const ARGV = IS_DENO ? Deno.args : process.argv.slice(2);
const ARRAYS = { float32: ["Float32Array"], float16: ["Float16Array", "Uint16Array"] };
const TYPED = { float32: Float32Array, float16: globalThis.Float16Array || Uint16Array, float64: Float64Array,
                int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array, int32: Int32Array,
                uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array };
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

// stdout carries the answers alone: whatever a loader logs goes to stderr
for (const k of ["log", "info", "debug"]) console[k] = console.error.bind(console);

function option(name, many = false) {
  const out = [];
  for (let i = 0; i < ARGV.length; i++) if (ARGV[i] === name && i + 1 < ARGV.length) out.push(ARGV[++i]);
  return many ? out : out.length ? out[out.length - 1] : null;
}

const OPTS = {
  loader: option("--loader") || new URL("../../../loader/src/index.js", import.meta.url).pathname,
  webgpu: option("--webgpu"),                 // Node: the npm `webgpu` package's index.js
  jinja: option("--jinja"),                   // Node: what the bare name @huggingface/jinja resolves to
  dawnOptions: option("--dawn-option", true), // Node: create() options (backend=opengles, enable-dawn-features=...)
  featureLevel: option("--feature-level"),    // requestAdapter's featureLevel ("core", "compatibility")
  scratch: option("--scratch"),
};

const fileUrl = (p) => (/^[a-z]+:/i.test(p) ? p : new URL(`file://${p.startsWith("/") ? "" : "/"}${p}`).href);

// Node has no import map: a resolve hook gives the loader's bare `@huggingface/jinja` the file --jinja names, wherever
// the loader module lives (Deno gets an import map from the driver instead)
if (!IS_DENO && OPTS.jinja) {
  const { register } = await import("node:module");   // Node 18.19 / 20.6 and later
  const hook = `export async function resolve(specifier, context, next) {
    return specifier === "@huggingface/jinja" ? { url: ${JSON.stringify(fileUrl(OPTS.jinja))}, shortCircuit: true }
      : next(specifier, context); }`;
  if (typeof register === "function") register(`data:text/javascript,${encodeURIComponent(hook)}`);
}
const message = (e) => (e && e.message ? `${e.name || "Error"}: ${e.message}` : String(e));
const errorOf = (e) => ({ name: (e && e.name) || "Error", message: String((e && e.message) || e),
  reason: e && typeof e.reason === "string" ? e.reason : null, argument: e && e.argument != null ? String(e.argument) : null,
  failures: e && e.failures && typeof e.failures === "object" ? e.failures : null });
const numel = (shape) => shape.reduce((a, b) => a * b, 1);

function settled(promise, what) {
  let timer;
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what} did not settle within ${BACKSTOP_MS / 1000} s (the loader hangs)`), { name: "LoaderHang" })), BACKSTOP_MS);
  });
  return Promise.race([Promise.resolve().then(() => promise), hang]).finally(() => clearTimeout(timer));
}

function limitsOf(limits) {
  const out = {};
  for (const k in limits) if (typeof limits[k] === "number") out[k] = limits[k];
  return out;
}

// -- bytes ---------------------------------------------------------------------------------------
function scratchPath(name) {
  if (!OPTS.scratch) throw new Error("a file ref needs --scratch");
  if (!FILE_NAME.test(name)) throw new Error(`file ref ${JSON.stringify(name).slice(0, 80)} is not a plain file name`);
  return `${OPTS.scratch}/${name}`;
}

function unpack(ref) {
  if (ref && typeof ref.b64 === "string") {
    const b = Buffer.from(ref.b64, "base64");
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  if (ref && typeof ref.file === "string") return new Uint8Array(readFileSync(scratchPath(ref.file)));
  throw new Error("a data ref must be {b64} or {file}");
}

let OUTS = 0;
function pack(u8) {
  if (u8.byteLength <= INLINE_LIMIT || !OPTS.scratch) return { b64: Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("base64") };
  const name = `out-${process_id()}-${++OUTS}.bin`;
  writeFileSync(scratchPath(name), u8);
  return { file: name };
}
const process_id = () => (IS_DENO ? Deno.pid : process.pid);

/** An output as the interface says it: {data: TypedArray of its dtype, shape, dtype}, data.length = numel. */
function checkOutput(role, got) {
  if (!got || typeof got !== "object") throw new Error(`output ${role}: the kernel returned ${got === undefined ? "nothing" : typeof got} for it`);
  const { data, shape, dtype } = got;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`output ${role}: shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
  if (!(dtype in ARRAYS)) throw new Error(`output ${role}: dtype ${JSON.stringify(dtype)} is not float32 or float16`);
  const kind = data && data.constructor && data.constructor.name;
  if (!ArrayBuffer.isView(data) || !ARRAYS[dtype].includes(kind)) throw new Error(`output ${role}: data is ${kind || typeof data}, not ${ARRAYS[dtype].join(" or ")} for ${dtype}`);
  if (data.length !== numel(shape)) throw new Error(`output ${role}: data has ${data.length} elements, its shape ${JSON.stringify(shape)} has ${numel(shape)}`);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

// -- the device ------------------------------------------------------------------------------------
let DEVICE = null;   // the one GPUDevice every kernel gets (its limits and features are the profile)
let INFO = null;     // what "device" answers
let LOST = null;     // why the device was lost: every later request answers it
const KERNELS = new Map();   // key -> kernel
const LOADERS = new Map();   // module URL -> promise of the module

async function nodeGpu() {
  if (!OPTS.webgpu) throw new Error("--webgpu (the npm package webgpu's index.js) is required under Node");
  const { create, globals } = await import(fileUrl(OPTS.webgpu));
  Object.assign(globalThis, globals);   // GPUBufferUsage, GPUShaderStage, GPUMapMode... as a page has them
  // without options: Dawn's default adapter (Vulkan on a GPU); then OpenGL ES in compatibility mode (llvmpipe on a
  // machine whose Vulkan driver Dawn refuses, as Mesa 22's lavapipe): the first that gives an adapter
  const tries = OPTS.dawnOptions.length || OPTS.featureLevel ? [[OPTS.dawnOptions, OPTS.featureLevel]]
    : [[[], null], [["backend=opengles"], "compatibility"]];
  const tried = [];
  for (const [dawnOptions, featureLevel] of tries) {
    const gpu = create(dawnOptions);
    const adapter = await gpu.requestAdapter(featureLevel ? { featureLevel } : undefined);
    tried.push(`create(${JSON.stringify(dawnOptions)}) + requestAdapter(${featureLevel ? `{featureLevel: "${featureLevel}"}` : ""})`);
    if (!adapter) continue;
    try {
      if (globalThis.navigator) Object.defineProperty(globalThis.navigator, "gpu", { value: gpu, configurable: true });
      else globalThis.navigator = { gpu };
    } catch { /* the loader gets the device: navigator.gpu is a convenience */ }
    return { adapter, dawnOptions, featureLevel: featureLevel || "core", webgpu: `dawn.node (npm webgpu ${await packageVersion(OPTS.webgpu)})` };
  }
  throw new Error(`Dawn for Node gave no adapter (tried ${tried.join("; ")})`);
}

async function packageVersion(indexJs) {
  try { return JSON.parse(readFileSync(new URL("package.json", fileUrl(indexJs)))).version; } catch { return "?"; }
}

async function openDevice() {
  if (DEVICE) return INFO;
  if (LOST) throw new Error(`the device was lost: ${LOST}`);
  let got;
  if (IS_DENO) {
    if (!navigator.gpu) throw new Error("Deno has no navigator.gpu (run with --unstable-webgpu)");
    const featureLevel = OPTS.featureLevel;
    const adapter = await navigator.gpu.requestAdapter(featureLevel ? { featureLevel } : undefined);
    if (!adapter) throw new Error("navigator.gpu.requestAdapter() returned null");
    got = { adapter, dawnOptions: [], featureLevel: featureLevel || "core", webgpu: `wgpu (deno ${Deno.version.deno})` };
  } else {
    got = await nodeGpu();
  }
  const { adapter } = got;
  const requiredFeatures = adapter.features.has("shader-f16") ? ["shader-f16"] : [];
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits: limitsOf(adapter.limits) });
  device.lost.then((info) => { LOST = `${info.reason}: ${info.message}`; DEVICE = null; KERNELS.clear(); });
  const a = adapter.info || {};
  INFO = {
    runtime: IS_DENO ? "deno" : "node",
    runtimeVersion: IS_DENO ? Deno.version.deno : process.versions.node,
    webgpu: got.webgpu,
    adapter: { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description,
               isFallbackAdapter: a.isFallbackAdapter ?? adapter.isFallbackAdapter ?? null },
    featureLevel: got.featureLevel,
    dawnOptions: got.dawnOptions,
    adapterFeatures: [...adapter.features].sort(),
    features: [...device.features].sort(),
    limits: limitsOf(device.limits),
    float16Array: typeof globalThis.Float16Array === "function",
  };
  DEVICE = device;
  return INFO;
}

// -- the commands (page_loader.mjs's, over the wire) ------------------------------------------------------
async function kernelCommand({ key, versions, version, module }) {
  try {
    await openDevice();
    const url = fileUrl(module || OPTS.loader);
    if (!LOADERS.has(url)) LOADERS.set(url, import(url).catch((e) => { LOADERS.delete(url); throw e; }));
    const loader = await settled(LOADERS.get(url), `import(${url})`);
    if (typeof loader.getKernel !== "function") return { error: { name: "LoaderInterface", message: `${url} exports no getKernel function` } };
    const files = {};
    for (const [v, named] of Object.entries(versions || {})) {
      files[v] = {};
      for (const [name, ref] of Object.entries(named)) files[v][name] = unpack(ref);
    }
    const kernel = await settled(loader.getKernel({ versions: files }, { version, device: DEVICE }), "getKernel()");
    if (typeof kernel !== "function" || typeof kernel.plan !== "function") {
      return { error: { name: "LoaderInterface", message: "getKernel() did not resolve to a function with a plan method" } };
    }
    KERNELS.set(key, kernel);
    return { ok: true };
  } catch (e) { return { error: errorOf(e) }; }
}

async function runCommand({ key, inputs, options, planOnly }) {
  if (LOST) return { error: { name: "DeviceLost", message: `the device was lost: ${LOST}` }, lost: LOST };
  const kernel = KERNELS.get(key);
  if (!kernel) return { error: { name: "LoaderHost", message: `no kernel ${key} in the host (kernel first)` } };
  const args = {};
  try {
    for (const [role, entry] of Object.entries(inputs || {})) {
      if (entry === null) continue;
      const [dtype, shape, ref] = entry;
      if (ref !== null && !TYPED[dtype]) return { error: { name: "LoaderHost", message: `input ${role}: no typed array for ${dtype}` } };
      args[role] = ref === null ? { shape, dtype } : { shape, data: new TYPED[dtype](unpack(ref).slice().buffer) };
    }
  } catch (e) { return { error: { name: "LoaderHost", message: message(e) } }; }
  const answer = {};
  const t0 = performance.now();
  try {
    answer.plan = await settled(kernel.plan(args, options), "kernel.plan()");
  } catch (e) { answer.rejected = errorOf(e); }
  if (planOnly) return answer;
  const t1 = performance.now();
  try {
    const got = await settled(kernel(args, options), "kernel()");
    if (answer.rejected) {
      answer.error = { name: "LoaderInconsistent", message: `kernel.plan() refused the call (${answer.rejected.message}) but kernel() ran it` };
    } else {
      if (!got || typeof got !== "object") throw new Error(`kernel() resolved to ${typeof got}, not {role: {data, shape, dtype}}`);
      answer.outputs = {};
      for (const role of Object.keys(answer.plan.outputs || {})) {
        const bytes = checkOutput(role, got[role]);
        answer.outputs[role] = [got[role].dtype, got[role].shape, pack(bytes)];
      }
    }
  } catch (e) {
    if (!answer.rejected) answer.error = errorOf(e);
    else answer.runRejected = errorOf(e);
  }
  answer.ms = { plan: t1 - t0, run: performance.now() - t1 };
  if (typeof kernel.stats === "function") {
    try { answer.stats = await settled(kernel.stats(), "kernel.stats()"); } catch { /* optional */ }
  }
  if (LOST) answer.lost = LOST;
  return answer;
}

async function handle(request) {
  switch (request.op) {
    case "device":
      try { return { device: await openDevice() }; } catch (e) { return { error: { name: "NoDevice", message: message(e) } }; }
    case "kernel": return kernelCommand(request);
    case "run": return runCommand(request);
    case "release": for (const k of request.keys || []) KERNELS.delete(k); return { ok: true };
    case "exit": return { ok: true };
    default: return { error: { name: "LoaderHost", message: `unknown op ${JSON.stringify(request.op)}` } };
  }
}

// -- the wire ------------------------------------------------------------------------------------
const encoder = new TextEncoder();
let writeOut;
if (IS_DENO) {
  const writer = Deno.stdout.writable.getWriter();
  writeOut = (text) => writer.write(encoder.encode(text));
} else {
  writeOut = (text) => new Promise((resolve, reject) => process.stdout.write(text, (e) => (e ? reject(e) : resolve())));
}

async function* lines() {
  const decoder = new TextDecoder();
  let buffered = "";
  const chunks = IS_DENO ? Deno.stdin.readable : process.stdin;
  for await (const chunk of chunks) {
    buffered += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let at;
    while ((at = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      if (line.trim()) yield line;
    }
  }
  if (buffered.trim()) yield buffered;
}

function exit(code) {
  try { if (DEVICE) DEVICE.destroy(); } catch { /* exiting anyway */ }
  if (IS_DENO) Deno.exit(code); else process.exit(code);   // dawn.node keeps the loop alive: exit explicitly
}

for await (const line of lines()) {
  let request;
  try { request = JSON.parse(line); } catch (e) {
    await writeOut(`${MARK}${JSON.stringify({ id: null, error: { name: "LoaderHost", message: `not JSON: ${message(e)}` } })}\n`);
    continue;
  }
  let answer;
  try { answer = await handle(request); } catch (e) { answer = { error: errorOf(e) }; }
  await writeOut(`${MARK}${JSON.stringify({ id: request.id ?? null, ...answer })}\n`);
  if (request.op === "exit") break;
}
exit(0);
