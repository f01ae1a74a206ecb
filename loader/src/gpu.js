// Plans run on a GPUDevice. One Runtime per device, shared by every kernel on it: pipelines cached by rendered text
// and binding layout, a pool of tensor and read-back buffers, and the recordings (command encoders) calls are
// encoded into. A kernel() call is recorded into a recording of its own, submitted at once, or into a Batch's, which
// the caller submits once for many calls. A buffer a recording not yet submitted uses is never handed out again nor
// destroyed before that submission (queue.writeBuffer runs before the recording's commands, so reusing it earlier
// would change what they read); once submitted, WebGPU's queue order makes reuse safe.
import { ContractError, KernelRuntimeError } from "./errors.js";
import { roundUp } from "./layout.js";
import { has } from "./own.js";
import { Lru } from "./signature.js";
import { outputArray } from "./tensors.js";

const padded = (n) => Math.max(4, roundUp(n, 4));

/** Compiled pipelines kept per device (least recently used dropped first). */
export const PIPELINES = 256;
/** Bind groups kept per pass of a cached signature (each binds one set of buffers: a model calling a signature n
 * times a forward pass binds n sets, the same ones every pass). */
export const BIND_GROUPS = 64;
/** Free buffers a device's pool keeps, at most this many bytes and this many buffers (oldest destroyed first). */
export const POOL_BYTES = 256 * 2 ** 20;
export const POOL_BUFFERS = 256;

/** Size classes of pooled buffers: 4 per octave (at most 25% over what was asked), 256 bytes the least. */
export function sizeClass(bytes) {
  if (bytes <= 256) return 256;
  const step = 2 ** (Math.floor(Math.log2(bytes - 1)) - 2);
  return Math.ceil(bytes / step) * step;
}

/** The profile a device gives plans: its limits and features, each restricted further by `restrict`
 * ({limits, features}: a stricter profile the caller plans for; each limit the stricter of the two, the features
 * both have).
 * @param {import("../types/index.js").DeviceLike} device
 * @param {{limits?: {[name: string]: number}, features?: string[]} | null} [restrict] */
export function deviceProfile(device, restrict = null) {
  const limits = {};
  for (const key in device.limits) if (typeof device.limits[key] === "number") limits[key] = device.limits[key];
  let features = [...device.features];
  if (restrict) {
    for (const [key, value] of Object.entries(restrict.limits || {})) {
      if (!has(limits, key)) continue;
      limits[key] = key.startsWith("min") ? Math.max(limits[key], value) : Math.min(limits[key], value);
    }
    if (restrict.features) features = features.filter((f) => restrict.features.includes(f));
  }
  return { limits, features };
}

/** A device with shader-f16 where the adapter has it, and the adapter's limits. */
export async function openDevice() {
  if (!globalThis.navigator || !navigator.gpu) {
    throw new KernelRuntimeError("this JavaScript engine has no WebGPU (navigator.gpu)");
  }
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new KernelRuntimeError("navigator.gpu.requestAdapter() gave no adapter");
  /** @type {GPUFeatureName[]} */
  const requiredFeatures = adapter.features.has("shader-f16") ? ["shader-f16"] : [];
  /** @type {{[name: string]: number}} */
  const requiredLimits = {};
  for (const key in adapter.limits) {
    if (typeof adapter.limits[key] === "number") requiredLimits[key] = adapter.limits[key];
  }
  return adapter.requestDevice({ requiredFeatures, requiredLimits });
}

let DEFAULT_DEVICE = null;

/** The device of kernels loaded without one: one for them all (so one's outputs can be another's inputs), opened
 * on first use and again after it is lost. */
export function defaultDevice() {
  if (DEFAULT_DEVICE === null) {
    const opening = openDevice();
    DEFAULT_DEVICE = opening;
    opening.then((d) => d.lost.then(() => { if (DEFAULT_DEVICE === opening) DEFAULT_DEVICE = null; }),
                 () => { if (DEFAULT_DEVICE === opening) DEFAULT_DEVICE = null; });
  }
  return DEFAULT_DEVICE;
}

const RUNTIMES = new WeakMap();   // GPUDevice -> Runtime

/** The Runtime of `device` (made on first use). */
export function runtimeOf(device) {
  let rt = RUNTIMES.get(device);
  if (!rt) RUNTIMES.set(device, (rt = new Runtime(device)));
  return rt;
}

/** The Runtime of `device` if one was made, else null. */
export const existingRuntime = (device) => RUNTIMES.get(device) ?? null;

/** The first error of WebGPU error scopes (promises of a GPUError or null), or null. */
const firstError = (scopes) => Promise.all(scopes).then((errors) => errors.find(Boolean) ?? null);

/** Pops the two error scopes `scope()` pushed: a promise of the first error, or null. */
function popScopes(d) {
  const validation = d.popErrorScope();
  const memory = d.popErrorScope();
  return Promise.all([validation, memory]).then(([v, m]) => v || m || null, (err) => err);
}

/** Calls encoded into one command encoder, submitted once. */
export class Recording {
  constructor(rt) {
    this.rt = rt;
    this.encoder = null;        // made when the first call is encoded
    this.held = [];             // buffers it uses: none is handed out again or destroyed before it is submitted
    this.owned = [];            // buffers only it uses: destroyed once it is submitted
    this.scopes = [];           // what WebGPU said of each call's encoding, and of the submission
    this.calls = 0;
    this.submitted = false;
    /** @type {Promise<any>} the first error WebGPU reported for it, or null: settles once it is submitted */
    this.status = new Promise((resolve) => { this.settle = resolve; });
  }

  get open() { return !this.submitted; }
}

export class Runtime {
  constructor(device) {
    this.device = device;
    this.pipelines = new Lru(PIPELINES);   // binding layout + rendered text -> promise of {pipeline, layout}
    this.compilations = 0;
    this.dispatches = 0;
    this.submits = 0;
    this.created = 0;                      // buffers created (tensors, read-backs, uniforms)
    this.reused = 0;                       // buffers handed out again from the pool
    this.destroyed = 0;
    this.free = new Map();                 // "usage:size" -> free buffers of that kind, the least recently freed first
    this.freeOrder = new Set();            // every free buffer, least recently freed first
    this.freeBytes = 0;
    this.poolable = new WeakMap();         // buffer -> {kind, size}: the buffers the pool owns
    this.busy = new Map();                 // buffer -> how many recordings not yet submitted use it
    this.later = new Map();                // buffer -> what to do with it once no such recording uses it
    this.gone = new WeakSet();             // buffers the loader destroyed
    this.ids = new WeakMap();              // buffer -> a number, for bind group keys
    this.nextId = 1;
  }

  idOf(buffer) {
    let id = this.ids.get(buffer);
    if (id === undefined) this.ids.set(buffer, (id = this.nextId++));
    return id;
  }

  /** A buffer of at least `bytes` with `usage`: a free one of its size class from the pool when `pooled` (the one
   * freed longest ago: a model's forward pass, which frees its buffers in the order it took them, takes the same
   * buffers in the same order the next time, so its bind groups are found again), else a new one of
   * `padded(bytes)`. `before()` is called before a buffer is created. */
  take(usage, bytes, pooled, label, before = () => {}) {
    if (pooled) {
      const size = sizeClass(bytes);
      const kind = `${usage}:${size}`;
      const queue = this.free.get(kind);
      if (queue?.length) {
        const b = queue.shift();
        this.freeOrder.delete(b);
        this.freeBytes -= size;
        this.reused++;
        return b;
      }
      before();
      const b = this.device.createBuffer({ size, usage, label });
      this.poolable.set(b, { kind, size });
      this.created++;
      return b;
    }
    before();
    this.created++;
    return this.device.createBuffer({ size: padded(bytes), usage, label });
  }

  /** The loader is done with `buffer`: back to the pool if the pool owns it, else destroyed; either once no
   * recording not yet submitted uses it. */
  give(buffer) {
    if (this.busy.has(buffer)) {
      this.later.set(buffer, () => this.give(buffer));
      return;
    }
    const pooled = this.poolable.get(buffer);
    if (pooled === undefined) {
      buffer.destroy();
      this.destroyed++;
      this.gone.add(buffer);
      return;
    }
    let queue = this.free.get(pooled.kind);
    if (!queue) this.free.set(pooled.kind, (queue = []));
    queue.push(buffer);
    this.freeOrder.add(buffer);
    this.freeBytes += pooled.size;
    while (this.freeBytes > POOL_BYTES || this.freeOrder.size > POOL_BUFFERS) {
      const oldest = this.freeOrder.values().next().value;
      const info = this.poolable.get(oldest);
      const list = this.free.get(info.kind);
      list.splice(list.indexOf(oldest), 1);
      this.freeOrder.delete(oldest);
      this.freeBytes -= info.size;
      this.poolable.delete(oldest);
      oldest.destroy();
      this.destroyed++;
      this.gone.add(oldest);
    }
  }

  /** Whether the loader has given `buffer` up (free in its pool, destroyed, or to be either once submitted). */
  released(buffer) {
    return this.freeOrder.has(buffer) || this.gone.has(buffer) || this.later.has(buffer);
  }

  hold(rec, buffer) {
    this.busy.set(buffer, (this.busy.get(buffer) ?? 0) + 1);
    rec.held.push(buffer);
  }

  /** Submits `rec` (once): its buffers may then be reused, those only it used are destroyed. */
  submit(rec) {
    if (rec.submitted) return;
    rec.submitted = true;
    const d = this.device;
    if (rec.encoder) {
      d.pushErrorScope("out-of-memory");
      d.pushErrorScope("validation");
      d.queue.submit([rec.encoder.finish()]);
      rec.scopes.push(popScopes(d));
      this.submits++;
    }
    for (const b of rec.held) {
      const n = this.busy.get(b) - 1;
      if (n > 0) { this.busy.set(b, n); continue; }
      this.busy.delete(b);
      const then = this.later.get(b);
      if (then) {
        this.later.delete(b);
        then();
      }
    }
    for (const b of rec.owned) {
      b.destroy();
      this.destroyed++;
      this.gone.add(b);
    }
    rec.held = [];
    rec.owned = [];
    rec.settle(firstError(rec.scopes));
  }

  /** The compiled pipeline of a pass's text and its bind group layout, made once per device. */
  pipeline(pass, text) {
    const layoutKey = pass.bindings.map((b) => b.buffer).join(",");
    const key = `${layoutKey}\n${text}`;
    let made = this.pipelines.get(key);
    if (made === undefined) {
      made = this.compile(pass, text);
      this.pipelines.set(key, made);
      made.catch(() => { if (this.pipelines.map.get(key) === made) this.pipelines.map.delete(key); });
    }
    return made;
  }

  async compile(pass, text) {
    const d = this.device;
    d.pushErrorScope("validation");
    const module = d.createShaderModule({ code: text, label: pass.name });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === "error");
    const scoped = await d.popErrorScope();
    if (errors.length || scoped) {
      const shown = errors.map((m) => `line ${m.lineNum}: ${m.message}`).join("; ") || scoped.message;
      throw new KernelRuntimeError(`the shader does not compile: ${shown}`, { pass: pass.name });
    }
    const layout = d.createBindGroupLayout({ entries: pass.bindings.map((b) => ({
      binding: b.index, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.buffer } })) });
    let pipeline;
    try {
      pipeline = await d.createComputePipelineAsync({
        label: pass.name, layout: d.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: "main" } });
    } catch (err) {
      throw new KernelRuntimeError(`the pipeline cannot be made: ${err.message}`, { pass: pass.name });
    }
    this.compilations++;
    return { pipeline, layout };
  }

  /** What a plan's passes need on the device beyond its tensors: each dispatching pass's pipeline and layout, and
   * its uniform buffers, written once (`texts`: the WGSL of each pass). `cached`: the signature is cached, so its
   * bind groups are too. {passes: [{pipeline, layout, uniforms: Map(index -> {buffer, size}), groups} | null],
   * uniforms: [every uniform buffer], scope: a promise of what WebGPU said of making them (not awaited here: each
   * call's recording reports it)}. */
  async prepare(plan, texts, cached) {
    const passes = [];
    for (const [i, pass] of plan.passes.entries()) {
      const [x, y, z] = pass.dispatch.workgroups;
      passes.push(x * y * z === 0 ? null : { ...(await this.pipeline(pass, texts[i])), uniforms: new Map(),
                                             groups: cached ? new Lru(BIND_GROUPS) : null });
    }
    const d = this.device;
    const uniforms = [];
    d.pushErrorScope("out-of-memory");
    d.pushErrorScope("validation");
    for (const [i, pass] of plan.passes.entries()) {
      if (passes[i] === null) continue;
      for (const b of pass.bindings) {
        if (b.buffer !== "uniform") continue;
        const data = new Uint8Array(roundUp(Math.max(b.data.length, 16), 16));
        data.set(b.data);
        const u = d.createBuffer({ size: data.length, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
                                   label: `${pass.name}.${b.name}` });
        this.created++;
        d.queue.writeBuffer(u, 0, data);
        uniforms.push(u);
        passes[i].uniforms.set(b.index, { buffer: u, size: data.length });
      }
    }
    return { passes, uniforms, scope: popScopes(d) };
  }

  /** Encodes every pass of `plan` into `rec` (`ready`: what prepare() made for it): `inputs`: role -> Uint8Array
   * (uploaded to buffers of the loader's), `given`: role -> GPUBuffer (tensors the caller holds), `outputBytes`:
   * role -> bytes. Returns role -> the output's buffer (null when empty), which the caller then owns. Nothing is
   * encoded when the call cannot bind (a KernelRuntimeError); every buffer it took is given back. */
  record(rec, { plan, ready, inputs, given, outputBytes, pooled }) {
    const d = this.device;
    const usage = GPUBufferUsage;
    const owned = rec.owned;
    let scoped = false;
    const scope = () => {
      if (scoped) return;
      d.pushErrorScope("out-of-memory");
      d.pushErrorScope("validation");
      scoped = true;
    };
    const taken = [];
    const buffer = (size, use, label) => {
      if (use & usage.STORAGE) {
        const b = this.take(usage.STORAGE | usage.COPY_SRC | usage.COPY_DST, size, pooled, label, scope);
        taken.push(b);
        return b;
      }
      scope();
      const b = d.createBuffer({ size, usage: use, label });
      this.created++;
      owned.push(b);
      return b;
    };
    try {
      const tensors = new Map();   // role -> buffer (roles are the manifest's names: a Map has no inherited ones)
      const uploads = [];
      for (const [role, bytes] of Object.entries(inputs)) {
        if (bytes.byteLength === 0) continue;
        tensors.set(role, buffer(padded(bytes.byteLength), usage.STORAGE | usage.COPY_DST, role));
        uploads.push(tensors.get(role));
        const data = bytes.byteLength % 4
          ? (() => { const p = new Uint8Array(padded(bytes.byteLength)); p.set(bytes); return p; })()
          : bytes;
        scope();
        d.queue.writeBuffer(tensors.get(role), 0, data);
      }
      for (const [role, b] of Object.entries(given)) if (b) tensors.set(role, b);
      for (const [role, size] of Object.entries(outputBytes)) {
        if (size > 0) tensors.set(role, buffer(padded(size), usage.STORAGE | usage.COPY_SRC, role));
      }
      // every pass's bind group before any pass is encoded: a call that cannot bind encodes nothing
      const groups = plan.passes.map((pass, i) => {
        const slot = ready.passes[i];
        if (slot === null) return null;
        const bound = pass.bindings.map((b) => {
          if (b.buffer === "uniform") return slot.uniforms.get(b.index).buffer;
          const t = tensors.get(b.arg);
          if (!t) {
            throw new KernelRuntimeError(`binding '${b.name}' would be zero-sized (argument '${b.arg}' is empty) ` +
                                         `but the pass dispatches ${pass.dispatch.threads} threads`,
                                         { pass: pass.name });
          }
          return t;
        });
        const key = slot.groups ? bound.map((b) => this.idOf(b)).join(",") : null;
        const known = key === null ? undefined : slot.groups.get(key);
        if (known !== undefined) return known;
        const entries = pass.bindings.map((b, k) => ({ binding: b.index, resource: b.buffer === "uniform"
          ? { buffer: bound[k], offset: 0, size: slot.uniforms.get(b.index).size }
          : { buffer: bound[k], offset: b.byteOffset, size: padded(b.bytes) } }));
        d.pushErrorScope("validation");
        const group = d.createBindGroup({ layout: slot.layout, entries });
        rec.scopes.push(d.popErrorScope());
        if (key !== null) slot.groups.set(key, group);
        return group;
      });
      rec.encoder ??= d.createCommandEncoder();
      const encoder = rec.encoder;
      for (const [i, pass] of plan.passes.entries()) {
        const [x, y, z] = pass.dispatch.workgroups;
        if (x * y * z === 0) continue;
        const cpass = encoder.beginComputePass();   // (no label: a label costs WebGPU a conversion per call)
        cpass.setPipeline(ready.passes[i].pipeline);
        cpass.setBindGroup(0, groups[i]);
        cpass.dispatchWorkgroups(x, y, z);
        cpass.end();
        this.dispatches++;
      }
      for (const b of tensors.values()) this.hold(rec, b);
      for (const u of ready.uniforms) this.hold(rec, u);
      rec.scopes.push(ready.scope);
      for (const b of uploads) this.give(b);   // (once rec is submitted: it is held)
      rec.calls++;
      return Object.fromEntries(Object.keys(outputBytes).map((role) => [role, tensors.get(role) ?? null]));
    } catch (err) {
      for (const b of taken) this.give(b);
      throw err;
    } finally {
      if (scoped) rec.scopes.push(popScopes(d));
    }
  }

  /** Encodes into `rec` a copy of `bytes` bytes of `buffer` to a buffer it can map; returns that buffer. */
  copyOut(rec, buffer, bytes, pooled) {
    const d = this.device;
    let scoped = false;
    const staging = this.take(GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, padded(bytes), pooled, "read-back",
                              () => { scoped = true; d.pushErrorScope("out-of-memory"); });
    if (scoped) rec.scopes.push(d.popErrorScope());
    rec.encoder ??= d.createCommandEncoder();
    rec.encoder.copyBufferToBuffer(buffer, 0, staging, 0, padded(bytes));
    this.hold(rec, buffer);
    this.hold(rec, staging);
    return staging;
  }

  /** The first `bytes` of `staging` once mapped (after the copy into it was submitted); `staging` is given back. */
  async readBack(staging, bytes) {
    try {
      await staging.mapAsync(GPUMapMode.READ, 0, padded(bytes));
      const got = new Uint8Array(staging.getMappedRange(0, padded(bytes)).slice(0, bytes));
      staging.unmap();
      return got;
    } finally {
      this.give(staging);
    }
  }
}

// -- batches and tensors that stay on the GPU ------------------------------------------------------------------------
const BATCHES = new WeakMap();   // Batch -> its state

/** Calls recorded into one command encoder and submitted once: `kernel(inputs, { batch })` records a call (its
 * outputs stay on the GPU), `batch.submit()` submits every call recorded since the last submission; reading an
 * output of a call not yet submitted submits the batch. A batch is of one device: the first call's. */
export class Batch {
  constructor() {
    BATCHES.set(this, { rt: null, rec: null, recording: 0, idle: [] });
  }

  /** Calls recorded and not yet submitted. */
  get pending() {
    const s = BATCHES.get(this);
    return s.rec ? s.rec.calls : 0;
  }

  /** Submits the calls recorded so far (after any call still being recorded), once; resolves when WebGPU has taken
   * them, rejects with a KernelRuntimeError if it refused any. */
  async submit() {
    const s = BATCHES.get(this);
    await null;   // reads and calls of this same turn join the submission
    while (s.recording > 0) await new Promise((resolve) => s.idle.push(resolve));
    const rec = s.rec;
    if (rec === null) return;
    s.rec = null;
    s.rt.submit(rec);
    const error = await rec.status;
    if (error) throw new KernelRuntimeError(`WebGPU refused the batch: ${error.message}`);
  }
}

/** The state of a batch, or a ContractError when `batch` is not one. */
export function batchState(batch) {
  const s = batch instanceof Batch ? BATCHES.get(batch) : undefined;
  if (!s) {
    throw new ContractError("options.batch must be a Batch (new Batch() of the loader)",
                            { reason: "argument", argument: "batch" });
  }
  return s;
}

/** A call starts being recorded into batch state `s`: submit() waits for it; call the returned function when it
 * is recorded or failed. */
export function enterBatch(s) {
  s.recording++;
  return () => {
    if (--s.recording === 0) for (const resolve of s.idle.splice(0)) resolve();
  };
}

/** The open recording of batch state `s` on runtime `rt` (its device must be the batch's). */
export function batchRecording(s, rt, what) {
  if (s.rt === null) s.rt = rt;
  if (s.rt !== rt) {
    throw new ContractError(`${what}: the batch records calls on another device than this kernel's`,
                            { reason: "argument", argument: "batch" });
  }
  s.rec ??= new Recording(rt);
  return s.rec;
}

const TENSORS = new WeakMap();   // GpuTensor -> its state

/** An output left on the GPU: {buffer, shape, dtype} (the buffer may be larger than the tensor; its first
 * numel(shape) elements are the tensor), an input of any kernel on the same device as it is. The caller owns the
 * buffer until release(): the loader neither reuses nor destroys it before. */
export class GpuTensor {
  /** @param {GPUBuffer} buffer @param {number[]} shape @param {string} dtype @param {any} state */
  constructor(buffer, shape, dtype, state) {
    this.buffer = buffer;
    this.shape = shape;
    this.dtype = dtype;
    TENSORS.set(this, state);
  }

  /** Whether release() was called. */
  get released() { return TENSORS.get(this).released; }

  /** The tensor's values: {data, shape, dtype} as kernel() gives them (submits the batch that writes it, if it is
   * not yet submitted). Rejects with a KernelRuntimeError if WebGPU refused a call that made it. */
  async read() {
    const s = TENSORS.get(this);
    if (s.released) {
      throw new ContractError(`output '${s.role}' of ${s.op} was released: it cannot be read`,
                              { reason: "buffer-released", argument: s.role });
    }
    const n = s.shape.reduce((a, b) => a * b, 1);
    if (s.bytes === 0) return { data: outputArray(new Uint8Array(0), s.dtype, 0), shape: [...s.shape], dtype: s.dtype };
    const pending = s.rec.open ? s.rec : null;
    const rec = pending ?? new Recording(s.rt);
    const staging = s.rt.copyOut(rec, this.buffer, s.bytes, s.pooled);
    if (pending) await s.batch.submit().catch(() => null);
    else s.rt.submit(rec);
    const error = (await s.status) || (await rec.status);
    if (error) {
      s.rt.give(staging);
      throw new KernelRuntimeError(`WebGPU refused the run: ${error.message}`);
    }
    return { data: outputArray(await s.rt.readBack(staging, s.bytes), s.dtype, n), shape: [...s.shape],
             dtype: s.dtype };
  }

  /** Gives the buffer back to the loader (its pool, or destroyed), once no call recorded and not yet submitted
   * reads it. Releasing twice does nothing. */
  release() {
    const s = TENSORS.get(this);
    if (s.released) return;
    s.released = true;
    s.rt.give(this.buffer);
  }
}

/** The state of a tensor of the loader's, or undefined. */
export const tensorState = (t) => (t instanceof GpuTensor ? TENSORS.get(t) : undefined);

/** A promise of the first error WebGPU reported for recording `rec` or for the calls that made `inputs` (tensor
 * states), else null. Settled promises keep no reference to the tensors: a chain of calls does not keep its history. */
export function callStatus(rec, inputs) {
  if (inputs.length === 0) return rec.status;
  return Promise.all([rec.status, ...inputs.map((s) => s.status)]).then((errors) => errors.find(Boolean) ?? null);
}
