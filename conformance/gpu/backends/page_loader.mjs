// The host of a JavaScript loader in the page (page_runtime.js loads this with ["extend", 0, "loader"]): it imports
// the loader module, hands it a package's files and each case's inputs, and answers what the loader did. The
// loader does all the rest (planning, rendering, dispatch). Each command answers {...} or {error}, never throws,
// so a loader that throws, hangs or returns garbage fails only the command (the case) it was running.
const LOADERS = new Map();   // module URL -> promise of the module
const KERNELS = new Map();   // key -> {kernel, module}
let DEVICE = null;           // the one GPUDevice every kernel gets (its limits and features are the profile)
const BACKSTOP_MS = 20000;   // a loader call that has not settled by then hangs: never a measurement
const ARRAYS = { float32: ["Float32Array"], float16: ["Float16Array", "Uint16Array"] };
// the typed array of each dtype a case may pass (float16: Float16Array where the browser has it, else the bits)
const TYPED = { float32: Float32Array, float16: globalThis.Float16Array || Uint16Array, float64: Float64Array,
                int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array, int32: Int32Array,
                uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array };

const message = (e) => (e && e.message ? `${e.name || "Error"}: ${e.message}` : String(e));
const errorOf = (e) => ({ name: (e && e.name) || "Error", message: String((e && e.message) || e),
  reason: e && typeof e.reason === "string" ? e.reason : null, argument: e && e.argument != null ? String(e.argument) : null,
  failures: e && e.failures && typeof e.failures === "object" ? e.failures : null });

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

const numel = (shape) => shape.reduce((a, b) => a * b, 1);

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

export function commands({ pack, unpack }) {
  return {
    async loaderDevice() {
      try {
        if (!DEVICE) {
          const adapter = await navigator.gpu.requestAdapter();
          if (!adapter) return { error: "navigator.gpu.requestAdapter() returned null" };
          const requiredFeatures = adapter.features.has("shader-f16") ? ["shader-f16"] : [];
          DEVICE = await adapter.requestDevice({ requiredFeatures, requiredLimits: limitsOf(adapter.limits) });
          DEVICE.lost.then(() => { DEVICE = null; KERNELS.clear(); });
        }
        return { features: [...DEVICE.features], limits: limitsOf(DEVICE.limits) };
      } catch (e) { return { error: message(e) }; }
    },

    async loaderKernel(_d, key, moduleUrl, versions, version, uploads) {
      try {
        const url = new URL(moduleUrl, new URL("../", import.meta.url)).href;
        if (!LOADERS.has(url)) LOADERS.set(url, import(url).catch((e) => { LOADERS.delete(url); throw e; }));
        const module = await settled(LOADERS.get(url), `import(${url})`);
        if (typeof module.getKernel !== "function") return { error: { name: "LoaderInterface", message: `${url} exports no getKernel function` } };
        const files = {};
        for (const [v, named] of Object.entries(versions)) {
          files[v] = {};
          for (const [name, ref] of Object.entries(named)) files[v][name] = unpack(ref, uploads);
        }
        const kernel = await settled(module.getKernel({ versions: files }, { version, device: DEVICE }), "getKernel()");
        if (typeof kernel !== "function" || typeof kernel.plan !== "function") {
          return { error: { name: "LoaderInterface", message: "getKernel() did not resolve to a function with a plan method" } };
        }
        KERNELS.set(key, kernel);
        return { ok: true };
      } catch (e) { return { error: errorOf(e) }; }
    },

    async loaderRun(_d, key, inputs, options, planOnly, uploads) {
      const kernel = KERNELS.get(key);
      if (!kernel) return { error: { name: "LoaderHost", message: `no kernel ${key} in the page (loaderKernel first)` } };
      const args = {};
      for (const [role, entry] of Object.entries(inputs)) {
        if (entry === null) continue;
        const [dtype, shape, ref] = entry;
        if (ref !== null && !TYPED[dtype]) return { error: { name: "LoaderHost", message: `input ${role}: no typed array for ${dtype}` } };
        args[role] = ref === null ? { shape, dtype }
          : { shape, data: new TYPED[dtype](unpack(ref, uploads).slice().buffer) };
      }
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
            answer.outputs[role] = [got[role].dtype, got[role].shape, await pack(bytes)];
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
      return answer;
    },

    loaderRelease(_d, keys) { for (const k of keys) KERNELS.delete(k); return { ok: true }; },
  };
}
