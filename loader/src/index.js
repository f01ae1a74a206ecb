// The reference loader of webgpu-kernel-conformance packages.
//
//   import { getKernel } from "@webgpu-kernels/loader";
//   const kernel = await getKernel("https://host/webgpu-kernels/com.microsoft.FastGelu", { version: 1 });
//   const { Y } = await kernel({ X: { data: XData, shape: [5] } });
//
// The interface a loader certified by the suite offers (docs/manual/js-loader.md): getKernel(source, options) and the
// kernel it resolves to, kernel(inputs, options) and kernel.plan(inputs, options).
//
// What a call's signature determines (its plan, its WGSL, its pipelines and uniform buffers, its bind groups) is
// made once per kernel and kept in a bounded cache keyed by the signature (signature.js); `getKernel(source, { cache:
// false })` makes it afresh for every call, and the two answer every call alike.
import { ContractError, KernelRuntimeError } from "./errors.js";
import {
  GpuTensor, Recording, batchRecording, batchState, callStatus, defaultDevice, deviceProfile, enterBatch,
  existingRuntime, runtimeOf, tensorState,
} from "./gpu.js";
import { loadPackage } from "./package.js";
import { planCall, planSummary } from "./planner.js";
import { RENDERS, Renderer } from "./render.js";
import { Lru, signatureKey, snapshotOptions } from "./signature.js";
import { outputArray, outputBytes, readGpuInput, readInput, readSpec } from "./tensors.js";

export { ContractError, ExpressionError, KernelRuntimeError, PackageError } from "./errors.js";
export { Batch } from "./gpu.js";

/** Signatures a kernel keeps by default (least recently used dropped first). */
const SIGNATURES = 256;
const MAX_SIGNATURES = 1 << 20;

/** How many signatures `cache` (getKernel's option) keeps: 0 for none. */
function cacheLimit(cache) {
  if (cache === undefined || cache === true) return SIGNATURES;
  if (cache === false) return 0;
  const n = cache !== null && typeof cache === "object" ? cache.signatures ?? SIGNATURES : NaN;
  if (!Number.isInteger(n) || n < 0 || n > MAX_SIGNATURES) {
    throw new TypeError(`options.cache must be true, false or {signatures: an integer from 0 to ${MAX_SIGNATURES}}, ` +
                        `got ${JSON.stringify(cache)}`);
  }
  return n;
}

/** A plan summary as plain data, copied (a caller may change what it gets; the cache keeps its own). */
function copy(x) {
  if (Array.isArray(x)) return x.map(copy);
  if (x === null || typeof x !== "object") return x;
  const out = {};
  for (const key of Object.keys(x)) {
    if (key === "__proto__") {
      Object.defineProperty(out, key, { value: copy(x[key]), enumerable: true, writable: true, configurable: true });
    } else {
      out[key] = copy(x[key]);
    }
  }
  return out;
}

/** Resolves to `kernel`, an async function of the package's inputs.
 * source: a package URL (version N > 1 at `<source>@N`) or {versions: {N: {file: string | Uint8Array}}}.
 * options: version (default: the newest published), device (a GPUDevice; default: one of the first adapter, with
 * shader-f16 where it has it, shared by the kernels loaded without one), fetch (for URLs), cache (true: keep what a
 * signature needs, at most 256 signatures; {signatures: n}: at most n; false: keep nothing).
 * @param {import("../types/index.js").PackageSource} source
 * @param {import("../types/index.js").GetKernelOptions} [options]
 * @returns {Promise<import("../types/index.js").Kernel>} */
export async function getKernel(source, { version, device, fetch, cache } = {}) {
  const limit = cacheLimit(cache);
  const pkg = await loadPackage(source, { version, fetch });
  const renderer = new Renderer(pkg.templates, pkg.where, limit > 0 ? RENDERS : 0);
  const manifest = pkg.manifest;
  const roles = manifest.inputs.map((s) => s.role);
  let opening = device ? Promise.resolve(device) : null;
  let theDevice = null;   // once known
  let profile = null;     // its limits and features, read once (a GPUDevice's never change)
  const counts = { planned: 0, cacheHits: 0 };
  const retire = (entry) => {
    if (entry.gpu) for (const u of entry.gpu.uniforms) entry.rt.give(u);
    entry.gpu = null;
  };
  const signatures = limit > 0 ? new Lru(limit, (entry) => {
    entry.evicted = true;
    if (entry.users === 0) retire(entry);
  }) : null;

  const gpu = async () => {
    const d = await (opening ??= defaultDevice());
    if (theDevice === null) {
      const p = deviceProfile(d);
      profile = { limits: Object.freeze(p.limits), features: Object.freeze(p.features) };
      theDevice = d;
    }
    return theDevice;
  };

  /** The call's inputs read and checked ({given: role -> tensor or null, read: the options as planned, key}).
   * `specs`: an input may be {shape, dtype} alone. */
  const readCall = (inputs, options, specs) => {
    if (inputs === null || typeof inputs !== "object") {
      throw new ContractError("the inputs must be an object {role: {data, shape}}, got " +
                              `${inputs === null ? "null" : typeof inputs}`, { reason: "argument" });
    }
    const given = Object.create(null);   // role -> tensor (no prototype: any name is an own property, __proto__ too)
    for (const role of Object.keys(inputs)) {
      if (!roles.includes(role)) {
        throw new ContractError(`${manifest.opId} has no input '${role}'; inputs are ${roles.join(", ")}`,
                                { reason: "unknown-argument", argument: role });
      }
      const value = inputs[role];
      const object = value !== null && typeof value === "object";
      given[role] = object && "buffer" in value && !("data" in value) ? readGpuInput(role, value)
        : specs && object && !("data" in value) ? readSpec(role, value) : readInput(role, value);
    }
    const read = snapshotOptions(options);
    return { given, read, key: signatures === null ? null : signatureKey(roles, given, read) };
  };

  /** The cache entry of a call's signature ({plan, summary, texts, gpu, ...}), planned on a miss; a fresh one,
   * kept nowhere, when the call has no key or the kernel no cache. */
  const entryOf = ({ given, read, key }) => {
    if (key !== null) {
      const hit = signatures.get(key);
      if (hit !== undefined) {
        counts.cacheHits++;
        return hit;
      }
    }
    const restricted = read.limits == null && read.features == null ? profile
      : deviceProfile(profile, { limits: read.limits, features: read.features });
    const plan = planCall(manifest, given, { profile: restricted, attributes: read.attributes,
                                             tunables: read.tunables });
    counts.planned++;
    const entry = { plan, summary: null, texts: null, ready: null, gpu: null, rt: null, users: 0, evicted: false,
                    cached: key !== null };
    if (key !== null) signatures.set(key, entry);
    return entry;
  };

  const textsOf = (entry) => {
    if (entry.texts === null) {
      entry.texts = entry.plan.passes.map((pass) => renderer.render(entry.plan, pass));
    }
    return entry.texts;
  };

  /** The plan of a call (variant, constants, bindings with uniforms, dispatch, outputs) without running it; an
   * input may be {shape, dtype} without data here. options: attributes, tunables, and limits/features to plan
   * for a stricter device than this one. */
  async function plan(inputs, options) {
    if (theDevice === null) await gpu();
    const entry = entryOf(readCall(inputs, options ?? {}, true));
    if (entry.summary === null) {
      const summary = planSummary(entry.plan);
      if (!entry.cached) return summary;
      entry.summary = summary;
    }
    return copy(entry.summary);
  }

  /** Runs the call: {role: {data, shape, dtype}} for every output the manifest derives; with options.outputs
   * "gpu-buffer" or options.batch, {role: GpuTensor} (the outputs stay on the GPU). */
  async function kernel(inputs, options) {
    const o = options ?? {};
    const batch = o.batch === undefined || o.batch === null ? null : batchState(o.batch);
    const onGpu = outputsOnGpu(o.outputs, batch !== null);
    const left = batch ? enterBatch(batch) : null;
    try {
      if (theDevice === null) await gpu();
      const rt = runtimeOf(theDevice);
      const call = readCall(inputs, o, false);
      const inputStates = [];
      for (const [role, t] of Object.entries(call.given)) {
        if (t === null || t.buffer === undefined) continue;
        const s = tensorState(inputs[role]);
        if (rt.released(t.buffer) || s?.released) {
          throw new ContractError(`input '${role}': its buffer was released (to the loader, which may reuse it)`,
                                  { reason: "buffer-released", argument: role });
        }
        if (s && s.rt !== rt) {
          throw new ContractError(`input '${role}': the tensor is on another device than this kernel's`,
                                  { reason: "buffer-device", argument: role });
        }
        if (s) inputStates.push(s);
      }
      // an input written by a call of another batch, not yet submitted: that batch first (WebGPU runs submissions
      // in order, so this call then reads what it wrote)
      for (const s of inputStates) {
        if (s.rec.open && s.batch !== (batch ? o.batch : null)) await s.batch.submit().catch(() => null);
      }
      const entry = entryOf(call);
      entry.users++;
      try {
        const gpuState = entry.gpu ?? await prepared(rt, entry);
        return await run(rt, entry, gpuState, call.given, inputStates, onGpu, batch && o.batch);
      } finally {
        if (--entry.users === 0 && entry.evicted) retire(entry);
      }
    } finally {
      if (left) left();
    }
  }

  /** What the entry's passes need on the device (prepare()), made once per cached entry (concurrent first calls
   * share it; a failure is not kept). */
  function prepared(rt, entry) {
    if (entry.ready === null) {
      const ready = rt.prepare(entry.plan, textsOf(entry), entry.cached);
      entry.ready = ready;
      ready.then((made) => {
        if (entry.ready !== ready) return;
        entry.gpu = made;
        entry.rt = rt;
        if (entry.evicted && entry.users === 0) retire(entry);
        // WebGPU refused a uniform buffer: the calls that used it fail (their recordings report it), the next makes
        // it again
        made.scope.then((error) => {
          if (!error || entry.gpu !== made || !entry.cached) return;
          retire(entry);
          entry.ready = null;
        });
      }, () => { if (entry.ready === ready) entry.ready = null; });
    }
    return entry.ready;
  }

  /** Records (and, unless batched, submits) the call: its outputs, or for outputs read back a promise of them. */
  function run(rt, entry, gpuState, given, inputStates, onGpu, batch) {   // batch: a Batch or null
    const p = entry.plan;
    const numel = (shape) => shape.reduce((a, b) => a * b, 1);
    const sizes = Object.fromEntries(Object.entries(p.outputs)
      .map(([r, o]) => [r, outputBytes(o.dtype, numel(o.shape))]));
    const bytes = {};
    const buffers = {};
    for (const [role, t] of Object.entries(given)) {
      if (t === null) continue;
      if (t.buffer === undefined) bytes[role] = t.bytes;
      else buffers[role] = t.byteLength > 0 ? t.buffer : null;
    }
    const pooled = entry.cached;
    const rec = batch ? batchRecording(batchState(batch), rt, manifest.opId) : new Recording(rt);
    let made;
    try {
      made = rt.record(rec, { plan: p, ready: gpuState, inputs: bytes, given: buffers, outputBytes: sizes, pooled });
    } catch (err) {
      if (!entry.cached) for (const u of gpuState.uniforms) rt.give(u);
      throw err;
    }
    if (!entry.cached) rec.owned.push(...gpuState.uniforms);   // this call's alone: destroyed once submitted
    if (!onGpu) {
      const stagings = Object.fromEntries(Object.entries(sizes).filter(([, size]) => size > 0)
        .map(([role, size]) => [role, rt.copyOut(rec, made[role], size, pooled)]));
      rt.submit(rec);
      for (const b of Object.values(made)) if (b) rt.give(b);
      return readOutputs(rt, p, rec, inputStates, sizes, stagings);
    }
    if (!batch) rt.submit(rec);
    const status = callStatus(rec, inputStates);
    return Object.fromEntries(Object.entries(p.outputs).map(([role, o]) => {
      const buffer = made[role] ?? rt.take(GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
                                           4, pooled, role);
      const state = { rt, rec, status, batch, role, op: manifest.opId,
                      shape: [...o.shape], dtype: o.dtype, bytes: sizes[role], pooled, released: false };
      return [role, new GpuTensor(buffer, [...o.shape], o.dtype, state)];
    }));
  }

  /** The outputs of a submitted call, read back from `stagings` (role -> buffer) once WebGPU said it ran. */
  async function readOutputs(rt, p, rec, inputStates, sizes, stagings) {
    const error = await callStatus(rec, inputStates);
    if (error) {
      for (const s of Object.values(stagings)) rt.give(s);
      throw new KernelRuntimeError(`WebGPU refused the run: ${error.message}`);
    }
    const out = [];
    for (const [role, o] of Object.entries(p.outputs)) {
      const n = o.shape.reduce((a, b) => a * b, 1);
      const got = sizes[role] > 0 ? await rt.readBack(stagings[role], sizes[role]) : new Uint8Array(0);
      out.push([role, { data: outputArray(got, o.dtype, n), shape: [...o.shape], dtype: o.dtype }]);
    }
    return Object.fromEntries(out);
  }

  kernel.plan = plan;
  /** WGSL of each pass of a call's plan, as the kernel would compile it. */
  kernel.render = async (inputs, options) => {
    if (theDevice === null) await gpu();
    return [...textsOf(entryOf(readCall(inputs, options ?? {}, true)))];
  };
  kernel.manifest = pkg.manifest.raw;
  kernel.version = pkg.version;
  /** What this kernel and its device did so far: the device's pipelines compiled, passes dispatched, submissions,
   * buffers created, reused from its pool and destroyed, free in its pool (every kernel of the device together);
   * this kernel's plans made, passes rendered, renders answered from its rendered texts (a new signature whose
   * passes see what an earlier one's saw), calls answered from its cache, signatures cached and dropped. */
  kernel.stats = async () => {
    if (theDevice === null) await gpu();
    const x = existingRuntime(theDevice);
    return {
      compilations: x ? x.compilations : 0, dispatches: x ? x.dispatches : 0, submits: x ? x.submits : 0,
      buffersCreated: x ? x.created : 0, buffersReused: x ? x.reused : 0, buffersDestroyed: x ? x.destroyed : 0,
      buffersFree: x ? x.freeOrder.size : 0, bytesFree: x ? x.freeBytes : 0,
      planned: counts.planned, rendered: renderer.rendered, rendersReused: renderer.reused, cacheHits: counts.cacheHits,
      cacheEntries: signatures ? signatures.size : 0, cacheEvictions: signatures ? signatures.evicted : 0,
    };
  };
  return kernel;
}

/** Whether a call leaves its outputs on the GPU: options.outputs "gpu-buffer", or a batch (whose calls are not
 * submitted when they resolve); "data" (the default) reads them back. */
function outputsOnGpu(outputs, batched) {
  if (outputs === undefined || outputs === null) return batched;
  if (outputs === "gpu-buffer") return true;
  if (outputs === "data" && !batched) return false;
  throw new ContractError(batched ? `a batch's calls leave their outputs on the GPU: options.outputs must be ` +
                                    `"gpu-buffer" or left out, got ${JSON.stringify(outputs)}`
                                  : `options.outputs must be "data" or "gpu-buffer", got ${JSON.stringify(outputs)}`,
                          { reason: "argument", argument: "outputs" });
}
