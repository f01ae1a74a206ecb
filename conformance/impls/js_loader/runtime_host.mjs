// The host of a JavaScript loader outside browsers: runs under Node (WebGPU from Dawn for Node, npm `webgpu`) or
// Deno (`deno run --unstable-webgpu`, whose WebGPU is wgpu), gets one adapter, and answers requests read from stdin,
// one JSON object a line, with page_loader.mjs's own commands: the loader is imported, handed the watched device and
// called exactly as in the page, and what it did is recorded and encoded the same way, so runtime.py (the Python
// driver that starts this) decodes it as the page's and the suite judges it on the same evidence.
//
//   node runtime_host.mjs --webgpu node_modules/webgpu/index.js --jinja .../jinja/dist/index.js [--loader M.js]
//        [--dawn-option backend=opengles ...] [--feature-level compatibility] [--scratch DIR]
//   deno run --unstable-webgpu --no-config --no-remote --no-npm --import-map MAP.json --allow-read=... \
//        runtime_host.mjs [--loader M.js] [--scratch DIR]
//
// Requests (one JSON object a line; `id` is echoed):
//   {id, op: "device"}                      -> {id, device: {runtime, runtimeVersion, webgpu, adapter: {vendor,
//                                              architecture, device, description, isFallbackAdapter}, featureLevel,
//                                              dawnOptions, adapterFeatures, features, limits, float16Array}}
//   {id, op: "kernel", key, versions: {N: {file name: ref}}, version, module?}  -> {id, ok: true} | {id, error}
//   {id, op: "run", key, inputs: {role: [dtype, shape, ref | null] | null}, options: {attributes, tunables, limits,
//    features}, planOnly}                   -> {id, plan?, rejected?, outputs?: {role: [dtype, shape, ref]}, error?,
//                                              runRejected?, gpu: the watch's record, ms: {plan, run, watch}, lost?}
//   {id, op: "release", keys: [key, ...]}   -> {id, ok: true}
//   {id, op: "exit"}                        -> {id, ok: true}, then the process exits
// A ref is {b64: "..."} or {file: "name"} (a plain file name in --scratch, for large data both ways). An error is
// {name, message, reason, argument, failures} (a ContractError's fields, as the page sends them). Every answer line
// starts with "@jsrt " so that anything else a runtime or a native library prints to stdout is not taken for one.
import { Buffer } from "node:buffer";
import { readFileSync, writeFileSync } from "node:fs";
import { commands } from "./page_loader.mjs";

const MARK = "@jsrt ";
const INLINE_LIMIT = 128 * 1024;  // larger outputs go through --scratch files when there is one
const IS_DENO = typeof globalThis.Deno !== "undefined";
const ARGV = IS_DENO ? Deno.args : process.argv.slice(2);
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
const message = (e) => (e?.message ? `${e.name || "Error"}: ${e.message}` : String(e));
const errorOf = (e) => ({ name: (e?.name) || "Error", message: message(e) });

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

// -- the adapter and the commands ------------------------------------------------------------------
let LOST = null;     // why the device was lost: the next case gets a fresh host (runtime.py)
let ADAPTER = null;  // how the adapter was had: {dawnOptions, featureLevel, webgpu}

async function nodeAdapter() {
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
    ADAPTER = { dawnOptions, featureLevel: featureLevel || "core", webgpu: `dawn.node (npm webgpu ${packageVersion(OPTS.webgpu)})` };
    return adapter;
  }
  throw new Error(`Dawn for Node gave no adapter (tried ${tried.join("; ")})`);
}

function packageVersion(indexJs) {
  try { return JSON.parse(readFileSync(new URL("package.json", fileUrl(indexJs)))).version; } catch { return "?"; }
}

async function denoAdapter() {
  if (!navigator.gpu) throw new Error("Deno has no navigator.gpu (run with --unstable-webgpu)");
  const featureLevel = OPTS.featureLevel;
  ADAPTER = { dawnOptions: [], featureLevel: featureLevel || "core", webgpu: `wgpu (deno ${Deno.version.deno})` };
  return navigator.gpu.requestAdapter(featureLevel ? { featureLevel } : undefined);
}

const COMMANDS = commands({ pack: async (u8) => pack(u8), unpack: (ref) => unpack(ref),
                            requestAdapter: IS_DENO ? denoAdapter : nodeAdapter,
                            onLost: (info) => { LOST = `${info?.reason}: ${info?.message}`; } });

async function deviceAnswer() {
  const got = await COMMANDS.loaderDevice();
  if (got.error) return { error: { name: "NoDevice", message: String(got.error) } };
  return { device: {
    runtime: IS_DENO ? "deno" : "node",
    runtimeVersion: IS_DENO ? Deno.version.deno : process.versions.node,
    ...ADAPTER, adapter: got.adapter, adapterFeatures: got.adapterFeatures, features: [...got.features].sort(),
    limits: got.limits,
    float16Array: typeof globalThis.Float16Array === "function",
  } };
}

async function handle(request) {
  switch (request.op) {
    case "device":
      try { return await deviceAnswer(); } catch (e) { return { error: { name: "NoDevice", message: message(e) } }; }
    case "kernel": {
      if (LOST) return { error: { name: "DeviceLost", message: `the device was lost: ${LOST}` }, lost: LOST };
      const device = await deviceAnswer();
      if (device.error) return device;
      return COMMANDS.loaderKernel(null, request.key, fileUrl(request.module || OPTS.loader), request.versions || {},
                                   request.version);
    }
    case "run": {
      if (LOST) return { error: { name: "DeviceLost", message: `the device was lost: ${LOST}` }, lost: LOST };
      const answer = await COMMANDS.loaderRun(null, request.key, request.inputs || {}, request.options,
                                              request.planOnly);
      if (LOST) answer.lost = LOST;
      return answer;
    }
    case "release": return COMMANDS.loaderRelease(null, request.keys || []);
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
    for (let at = buffered.indexOf("\n"); at >= 0; at = buffered.indexOf("\n")) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      if (line.trim()) yield line;
    }
  }
  if (buffered.trim()) yield buffered;
}

function exit(code) {
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
