// ONNX Runtime Web as commands of the one page runtime (page_runtime.js loads this with ["extend", 0, "ort"]).
// ORT's files come from the suite's server (served.py: ort/<file>, the pinned npm package's dist/), nothing from
// elsewhere. Sessions are made once per model key and kept; each command answers {ok...} or {error}, never
// throws, so one refused model or run does not fail the other commands of its batch.
//
// Which provider ran each node: ORT's verbose session log ("Node(s) placed on [X]. Number of nodes: N", or
// "All nodes placed on [X]"), read from what ORT writes to the console while the session is made. What else the
// page's console says during a command (warnings, errors: JSEP's "'f16' type used without 'f16' extension
// enabled") is answered with that command, as are WebGPU errors nobody caught on ORT's device.

const FLAVORS = { webgpu: "ort.webgpu.min.mjs", jsep: "ort.min.mjs" };
const BASE = new URL("../ort/", import.meta.url).href;
const LOADED = new Map();     // flavor -> promise of the ort module
let INSTANCE = 0;             // bumped when a WebAssembly trap left an instance unusable: the next import is fresh
const SESSIONS = new Map();   // key -> {session, flavor, placements}
const CONSOLE = [];           // {level, text} since the current command began
const LEVELS = ["log", "info", "debug", "warn", "error"];
const MAX_LINES = 200, MAX_TEXT = 2000;
const ARRAYS = { float32: Float32Array, float16: Uint16Array, int32: Int32Array, int64: BigInt64Array,
                 uint8: Uint8Array, int8: Int8Array, bool: Uint8Array, float64: Float64Array };

for (const level of LEVELS) {   // keep what the console gets, and still show it
  const original = console[level].bind(console);
  console[level] = (...args) => {
    if (CONSOLE.length < 20000) CONSOLE.push({ level, text: args.map((a) => String(a)).join(" ").slice(0, MAX_TEXT) });
    original(...args);
  };
}
addEventListener("error", (e) => CONSOLE.push({ level: "error", text: `uncaught: ${e.message}` }));

const ORT_LOG = /\[([VIWEF]):onnxruntime:/;   // "2026-12-01 13:49:55.216 [V:onnxruntime:Default, file.cc:34 f] text"
const SEVERITY = { V: "verbose", I: "info", W: "warn", E: "error", F: "error" };

/** The console lines since the command began: ORT's own log by its severity, shader dumps left out. */
function drain() {
  const out = [];
  let dump = false;
  for (const { level, text } of CONSOLE.splice(0)) {
    if (/=== WebGPU Shader code .* Start ===/.test(text)) { dump = true; continue; }
    if (dump) { if (/=== WebGPU Shader code .* End ===/.test(text)) dump = false; continue; }
    const ort = text.match(ORT_LOG);
    out.push({ level: ort ? SEVERITY[ort[1]] : level, text, ort: !!ort });
  }
  return out;
}

const WATCHED = "uncaptured WebGPU error on ORT's device: ";

/** What a command answers of the console: warnings and errors, at most MAX_LINES; an uncaptured error that ORT
 * already logged itself ("An uncaught WebGPU validation error was raised: ...", JSEP) is said once. */
function shown(lines) {
  const loud = lines.filter((l) => l.level === "warn" || l.level === "error");
  const said = loud.filter((l) => !l.text.startsWith(WATCHED)).map((l) => l.text);
  return loud.filter((l) => !l.text.startsWith(WATCHED) || !said.some((t) => t.includes(l.text.slice(WATCHED.length))))
    .slice(0, MAX_LINES).map(({ level, text }) => ({ level, text }));
}

function placementsOf(lines) {
  // ORT's session log: "All nodes placed on [WebGpuExecutionProvider]. Number of nodes: 1", or per provider
  // "Node(s) placed on [X]. Number of nodes: N"
  const found = {};
  for (const { text } of lines) {
    const m = text.match(/placed on \[(\w+)\]\. Number of nodes: (\d+)/);
    if (m) found[m[1]] = (found[m[1]] || 0) + Number(m[2]);
  }
  return found;
}

function watch(ort) {   // uncaught WebGPU errors of ORT's own device are console lines of the command
  const dev = ort.env.webgpu?.device;
  if (dev && typeof dev.addEventListener === "function" && !dev.__wkcWatched) {
    dev.__wkcWatched = true;
    dev.addEventListener("uncapturederror", (e) =>
      CONSOLE.push({ level: "error", text: WATCHED + e.error.message }));
  }
}

const message = (e) => (e?.message ? `${e.name && e.name !== "Error" ? `${e.name}: ` : ""}${e.message}` : String(e));

export function commands({ pack, unpack }) {
  async function load(flavor) {
    if (!FLAVORS[flavor]) throw new Error(`no ONNX Runtime Web flavor ${flavor} (known: ${Object.keys(FLAVORS)})`);
    if (!LOADED.has(flavor)) {
      const fresh = INSTANCE ? `?instance=${INSTANCE}` : "";
      LOADED.set(flavor, import(BASE + FLAVORS[flavor] + fresh).then((ort) => {
        ort.env.wasm.numThreads = 1;       // no cross-origin isolation needed
        ort.env.wasm.wasmPaths = BASE;
        ort.env.logLevel = "warning";      // ORT Web's own (JavaScript) log; the session's level is set per session
        return ort;
      }, (e) => { LOADED.delete(flavor); throw e; }));   // a failed load is tried again by the next command
    }
    return LOADED.get(flavor);
  }

  return {
    async ortLoad(_d, flavor) {
      CONSOLE.length = 0;
      const t0 = performance.now();
      try {
        const ort = await load(flavor);
        return { version: ort.env.versions ? ort.env.versions.web || ort.env.versions.common : null,
                 ms: performance.now() - t0, console: shown(drain()) };
      } catch (e) { return { error: message(e), console: shown(drain()) }; }
    },

    async ortSession(_d, flavor, key, model, uploads) {
      if (SESSIONS.has(key)) return { cached: true, placements: SESSIONS.get(key).placements, ms: 0, console: [] };
      CONSOLE.length = 0;
      const t0 = performance.now();
      try {
        const ort = await load(flavor);
        const session = await ort.InferenceSession.create(unpack(model, uploads), {
          executionProviders: ["webgpu"], logSeverityLevel: 0, logVerbosityLevel: 0,
          extra: { session: { disable_cpu_ep_fallback: "1" } } });
        watch(ort);
        const lines = drain();
        const placements = placementsOf(lines);
        SESSIONS.set(key, { session, flavor, placements });
        return { placements, ms: performance.now() - t0, console: shown(lines),
                 placementLog: lines.filter((l) => /placed on \[/.test(l.text)).map((l) => l.text).slice(0, 8) };
      } catch (e) {
        const lines = drain();
        return { error: message(e), placements: placementsOf(lines), ms: performance.now() - t0, console: shown(lines) };
      }
    },

    async ortRun(_d, key, feeds, uploads) {
      // feeds: {name: [dtype, dims, bytes]}; answers {outputs: {name: [dtype, dims, bytes]}, ms, console}
      const entry = SESSIONS.get(key);
      if (!entry) return { error: `no session ${key} in the page (made by ortSession first)` };
      CONSOLE.length = 0;
      const t0 = performance.now();
      try {
        const ort = await load(entry.flavor);
        const inputs = {};
        for (const [name, [dtype, dims, ref]] of Object.entries(feeds)) {
          const u8 = unpack(ref, uploads).slice();
          const Array_ = ARRAYS[dtype];
          if (!Array_) throw new Error(`no typed array for ${dtype}`);
          inputs[name] = new ort.Tensor(dtype, new Array_(u8.buffer, 0, u8.byteLength / Array_.BYTES_PER_ELEMENT), dims);
        }
        const got = await entry.session.run(inputs);
        const ms = performance.now() - t0;
        const outputs = {};
        for (const [name, t] of Object.entries(got)) {
          const data = t.data;
          outputs[name] = [t.type, [...t.dims], await pack(new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice())];
          if (typeof t.dispose === "function") t.dispose();
        }
        await new Promise((r) => setTimeout(r, 0));   // let an uncaptured error of the run land in this command
        return { outputs, ms, console: shown(drain()) };
      } catch (e) {
        const answer = { error: message(e), ms: performance.now() - t0, console: shown(drain()) };
        if (e instanceof WebAssembly.RuntimeError) {
          // a trap (divide by zero...) leaves ORT's instance unusable: its next run never ends. Drop it and its
          // sessions; the next command loads ORT Web afresh (a new module instance, a new WebAssembly instance).
          LOADED.delete(entry.flavor);
          for (const [k, v] of [...SESSIONS]) if (v.flavor === entry.flavor) SESSIONS.delete(k);
          INSTANCE++;
          answer.trapped = true;
        }
        return answer;
      }
    },

    async ortRelease(_d, keys) {
      for (const key of keys) {
        const entry = SESSIONS.get(key);
        SESSIONS.delete(key);
        if (entry) await entry.session.release();
      }
    },
  };
}
