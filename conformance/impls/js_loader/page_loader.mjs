// The host of a JavaScript loader in the page (page_runtime.js loads this with ["extend", 0, "loader"]): it imports
// the loader module, hands it a package's files and each case's inputs, and answers what the loader did. The
// loader does all the rest (planning, rendering, dispatch). Each command answers {...} or {error}, never throws,
// so a loader that throws, hangs or returns garbage fails only the command (the case) it was running.
//
// The loader's word is not the evidence: the device it is handed is the page's device seen through watchDevice,
// which records what each kernel() call did on it (shader modules and their WGSL, pipelines, dispatches and their
// workgroup counts, command buffers submitted) and copies each output binding of a dispatched pass as the GPU left
// it, so the suite can hold the outputs kernel() returned to the kernel that was dispatched.
const LOADERS = new Map();   // module URL -> promise of the module
const KERNELS = new Map();   // key -> {kernel, module}
let DEVICE = null;           // the one GPUDevice every kernel gets (its limits and features are the profile)
let WATCH = null;            // DEVICE as the loaders get it: watchDevice(DEVICE)
let ADAPTER = null;          // the adapter's info, for the report's device line
let ADAPTER_FEATURES = [];   // what the adapter offers (the device asks for shader-f16 where it is offered)
const BACKSTOP_MS = 20000;   // a loader call that has not settled by then hangs: never a measurement
const ARRAYS = { float32: ["Float32Array"], float16: ["Float16Array", "Uint16Array"] };
const ITEM = { float32: 4, float16: 2 };
// the typed array of each dtype a case may pass (float16: Float16Array where the browser has it, else the bits)
const TYPED = { float32: Float32Array, float16: globalThis.Float16Array || Uint16Array, float64: Float64Array,
                int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array, int32: Int32Array,
                uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array };
// an output binding up to this size is copied whole; a larger one (heavy cases), its first and last CAPTURE_END bytes
const CAPTURE_WHOLE = 16 << 20;
const CAPTURE_END = 8 << 20;

const message = (e) => (e?.message ? `${e.name || "Error"}: ${e.message}` : String(e));
const errorOf = (e) => ({ name: (e?.name) || "Error", message: String((e?.message) || e),
  reason: e && typeof e.reason === "string" ? e.reason : null, argument: e && e.argument != null ? String(e.argument) : null,
  failures: e?.failures && typeof e.failures === "object" ? e.failures : null });

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

function infoOf(adapter) {
  const i = adapter.info || {}, info = {};
  for (const k in i) { const v = i[k]; if (typeof v !== "object" && typeof v !== "function") info[k] = v; }
  return info;
}

const numel = (shape) => shape.reduce((a, b) => a * b, 1);
const roundUp4 = (n) => Math.ceil(n / 4) * 4;

/** An output as the interface says it: {data: TypedArray of its dtype, shape, dtype}, data.length = numel. Each
 * field is read once: {dtype, shape (a copy), bytes (a view of data)}. */
function checkOutput(role, got) {
  if (!got || typeof got !== "object") throw new Error(`output ${role}: the kernel returned ${got === undefined ? "nothing" : typeof got} for it`);
  const { data, shape, dtype } = got;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`output ${role}: shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
  if (!(dtype in ARRAYS)) throw new Error(`output ${role}: dtype ${JSON.stringify(dtype)} is not float32 or float16`);
  const kind = data?.constructor?.name;
  if (!ArrayBuffer.isView(data) || !ARRAYS[dtype].includes(kind)) throw new Error(`output ${role}: data is ${kind || typeof data}, not ${ARRAYS[dtype].join(" or ")} for ${dtype}`);
  if (data.length !== numel(shape)) throw new Error(`output ${role}: data has ${data.length} elements, its shape ${JSON.stringify(shape)} has ${numel(shape)}`);
  return { dtype, shape: [...shape], bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/** The plan as it stands now, as plain data: what the host acts on is what the suite is answered (a plan of getters
 * cannot show the host one thing and the suite another). */
const snapshot = (plan) => (plan === undefined ? plan : JSON.parse(JSON.stringify(plan)));

/**
 * `real` (a GPUDevice) as a loader is handed it, and what each kernel() call does on it.
 *
 * The device, its queue, its command encoders and their compute passes are Proxies of the real objects: every
 * property and method is the real one's, called on the real object (so WebGPU's brand checks hold, and `instanceof
 * GPUDevice` is true), a wrapper given back to a method is unwrapped, and a few methods also record: the WGSL of
 * each shader module, each compute pipeline's module, entry point and constants, each bind group's buffers (and
 * which of its layout's bindings take dynamic offsets), each dispatch (its workgroup counts, or indirect, with the
 * pipeline and bind groups set), and each command buffer submitted. Descriptors are read once and the values read
 * are what WebGPU gets, so a getter cannot show the watch one thing and WebGPU another.
 *
 * When a compute pass of a kernel() call ends, every output binding of the plan's pass each of its dispatches
 * stands for is copied, on the loader's own command encoder right behind the pass (so nothing the loader encodes
 * or submits afterwards can change what is copied), into buffers of the host's; once that command buffer is
 * submitted, the copies are read back. (The k-th dispatch of at least one workgroup that a call encodes stands for
 * the k-th pass of the plan that dispatches; the suite fails a call whose dispatches are not the plan's passes.)
 *
 * `begin(plan)` starts recording a kernel() call (`plan`: the call's plan, whose passes name the output bindings;
 * null for a refused call); it returns {settle(), tie(role, dtype, bytes), end()}: settle() awaits the copies,
 * tie() compares an output kernel() returned with its copies, end() stops recording and gives the record.
 */
export function watchDevice(real) {
  const REAL = new WeakMap();        // wrapper -> the object it wraps
  const MODULES = new WeakMap();     // GPUShaderModule -> its WGSL
  const PIPELINES = new WeakMap();   // GPUComputePipeline -> {code, entryPoint, constants}
  const LAYOUTS = new WeakMap();     // GPUBindGroupLayout -> its bindings that take dynamic offsets, ascending
  const GROUPS = new WeakMap();      // GPUBindGroup -> {entries: [{binding, buffer, offset, size}], dynamic}
  const ENCODED = new WeakMap();     // GPUCommandBuffer -> the dispatches encoded into it
  let call = null;                   // the kernel() call being recorded
  const UNKNOWN = { code: null, entryPoint: null, constants: {} };

  const unwrap = (v) => (v !== null && typeof v === "object"
    ? (REAL.has(v) ? REAL.get(v) : Array.isArray(v) ? v.map(unwrap) : v) : v);

  function wrap(target, own) {
    const methods = new Map();
    const proxy = new Proxy(target, {
      get(t, key) {
        if (Object.hasOwn(own, key)) return own[key];
        if (methods.has(key)) return methods.get(key);
        const value = Reflect.get(t, key, t);
        if (typeof value !== "function") return value;
        const method = (...args) => value.apply(t, args.map(unwrap));
        methods.set(key, method);
        return method;
      },
      set(t, key, value) { return Reflect.set(t, key, unwrap(value), t); },
    });
    REAL.set(proxy, target);
    return proxy;
  }

  const given = (descriptor, fields) => Object.assign(Object.create(descriptor), fields);

  function pipelineOf(descriptor) {
    const compute = descriptor.compute;
    const module = unwrap(compute.module);
    const entry = compute.entryPoint;
    const entryPoint = entry === undefined ? undefined : String(entry);
    const raw = compute.constants;
    const constants = raw == null ? undefined : Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
    return [given(descriptor, { compute: given(compute, { module, entryPoint, constants }) }),
            { code: MODULES.has(module) ? MODULES.get(module) : null, entryPoint: entryPoint ?? null, constants: constants || {} }];
  }

  function entryOf(entry) {
    const binding = Number(entry.binding);
    const resource = entry.resource;
    if (globalThis.GPUBuffer && resource instanceof GPUBuffer) {
      return [given(entry, { binding, resource }), { binding, buffer: resource, offset: 0, size: undefined }];
    }
    const buffer = resource && typeof resource === "object" ? resource.buffer : undefined;
    if (!(globalThis.GPUBuffer && buffer instanceof GPUBuffer)) return [given(entry, { binding, resource }), { binding, buffer: null }];
    const off = resource.offset, sz = resource.size;
    const offset = off === undefined ? undefined : Number(off), size = sz === undefined ? undefined : Number(sz);
    return [given(entry, { binding, resource: { buffer, offset, size } }), { binding, buffer, offset: offset ?? 0, size }];
  }

  function layoutEntryOf(entry) {
    const binding = Number(entry.binding);
    const buffer = entry.buffer;
    if (buffer == null || typeof buffer !== "object") return [given(entry, { binding, buffer }), null];
    const hasDynamicOffset = buffer.hasDynamicOffset === undefined ? undefined : Boolean(buffer.hasDynamicOffset);
    return [given(entry, { binding, buffer: given(buffer, { hasDynamicOffset }) }), hasDynamicOffset ? binding : null];
  }

  /** What an output binding of `d` holds, as [buffer, offset, bytes it holds] or the reason it cannot be copied. */
  function bindingOf(d, index, total) {
    const group = d.groups[0];
    if (!group?.entries) return "the dispatch had no bind group 0 made through the device the loader was given";
    const entry = group.entries.find((e) => e.binding === index);
    if (!entry?.buffer) return `the dispatch bound no buffer at group 0 binding ${index}`;
    if (group.offsets.length !== group.dynamic.length) return `its bind group was set with ${group.offsets.length} dynamic offsets, its layout takes ${group.dynamic.length}`;
    const at = group.dynamic.indexOf(index);
    const offset = entry.offset + (at < 0 ? 0 : group.offsets[at]);
    const holds = Math.min(entry.size ?? Infinity, entry.buffer.size - offset);
    if (!(entry.buffer.usage & GPUBufferUsage.COPY_SRC)) return `binding ${index}'s buffer has no COPY_SRC usage, so nothing reads it back`;
    if (offset % 4) return `binding ${index}'s offset ${offset} is not a multiple of 4`;
    if (holds < total) return `binding ${index} holds ${holds} bytes, the plan's ${total}`;
    return [entry.buffer, offset];
  }

  /** Copies, on `encoder` right behind a compute pass, of the output bindings its `dispatches` of call `c` wrote. */
  function captureAfter(c, encoder, dispatches) {
    const specs = new Map();   // "role@start" -> the latest dispatch's binding of that part of the output
    for (const d of dispatches) {
      if (!d.indirect && !d.workgroups.every((n) => n > 0)) continue;
      for (const { role, index, start, bytes } of c.outputsOf[c.encodedRan] || []) {
        const total = roundUp4(bytes);
        const where = bindingOf(d, index, total);
        const key = `${role}@${start}`;
        specs.set(key, typeof where === "string" ? { key, role, why: `output ${role}: ${where}` }
          : { key, role, start, bytes, source: where, ranges: total <= CAPTURE_WHOLE ? [[0, total]]
            : [[0, CAPTURE_END], [Math.floor((total - CAPTURE_END) / 4) * 4, total - Math.floor((total - CAPTURE_END) / 4) * 4]] });
      }
      c.encodedRan++;
    }
    const made = [...specs.values()];
    const copies = made.filter((m) => !m.why);
    if (copies.length) {
      real.pushErrorScope("out-of-memory");
      real.pushErrorScope("validation");
      for (const m of copies) {
        m.buffers = m.ranges.map(([at, length]) => {
          const b = real.createBuffer({ size: length, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: `loader host: ${m.role}` });
          encoder.copyBufferToBuffer(m.source[0], m.source[1] + at, b, 0, length);
          c.made.push(b);
          return b;
        });
        delete m.source;
      }
      const scope = Promise.all([real.popErrorScope(), real.popErrorScope()]).then(([v, o]) => v || o, (e) => e);
      for (const m of copies) m.scope = scope;
    }
    if (made.length && dispatches.length) dispatches[dispatches.length - 1].captures = made;
  }

  function passOf(pass, encoder, dispatches) {
    let pipeline = null;
    const bound = [];
    const mine = [];   // [the call recording then, dispatch] of this pass
    const record = (entry) => {
      const d = { ...entry, pipeline: pipeline || UNKNOWN, groups: bound.slice(), submitted: false };
      dispatches.push(d);
      if (call) { call.encoded.push(d); mine.push([call, d]); }
    };
    return wrap(pass, {
      setPipeline(p) {
        pass.setPipeline(unwrap(p));
        pipeline = PIPELINES.get(p) || UNKNOWN;
      },
      setBindGroup(index, group, ...rest) {
        const i = Number(index);
        let offsets = [];
        if (rest.length >= 3) {   // (Uint32Array, start, length)
          const [data, from, length] = [rest[0], Number(rest[1]), Number(rest[2])];
          if (!(data instanceof Uint32Array) || !(from >= 0 && length >= 0 && from + length <= data.length)) {
            pass.setBindGroup(i, group, data, from, length);   // what WebGPU refuses, as it refuses it
            bound[i] = { entries: null, dynamic: [], offsets: [] };
            return;
          }
          offsets = Array.from(data.subarray(from, from + length));
        } else if (rest[0] != null) offsets = Array.from(rest[0], Number);
        pass.setBindGroup(i, group, offsets);
        const seen = group ? GROUPS.get(group) : null;
        bound[i] = seen ? { entries: seen.entries, dynamic: seen.dynamic, offsets } : { entries: null, dynamic: [], offsets };
      },
      dispatchWorkgroups(x, y = 1, z = 1) {
        const w = [x, y, z].map(Number);
        pass.dispatchWorkgroups(...w);
        record({ workgroups: w.map(Math.trunc), indirect: false });
      },
      dispatchWorkgroupsIndirect(buffer, offset) {
        pass.dispatchWorkgroupsIndirect(buffer, offset);
        record({ workgroups: null, indirect: true });
      },
      end() {
        pass.end();
        const now = call;
        const ended = mine.splice(0).filter(([k]) => k === now).map(([, d]) => d);
        if (now && ended.length) captureAfter(now, encoder, ended);
      },
    });
  }

  function encoderOf(encoder) {
    const dispatches = [];
    return wrap(encoder, {
      beginComputePass(descriptor) { return passOf(encoder.beginComputePass(descriptor), encoder, dispatches); },
      finish(descriptor) {
        const buffer = encoder.finish(descriptor);
        ENCODED.set(buffer, dispatches.splice(0));
        return buffer;
      },
    });
  }

  function submitted(list) {
    const c = call;
    for (const b of list) {
      const dispatches = ENCODED.get(b);
      if (!dispatches) continue;
      ENCODED.delete(b);
      if (!c) continue;
      for (const d of dispatches) {
        d.submitted = true;
        c.dispatches.push(d);
        for (const m of d.captures || []) {
          c.captures.set(m.key, m);   // the latest copy of a part of an output stands
          if (m.buffers) m.data = m.buffers.map((x) => x.mapAsync(GPUMapMode.READ).then(() => new Uint8Array(x.getMappedRange()).slice(), (e) => e));
        }
      }
    }
  }

  const queue = wrap(real.queue, {
    submit(buffers) {
      const list = Array.from(buffers, unwrap);
      const out = real.queue.submit(list);
      submitted(list);
      return out;
    },
  });

  const device = wrap(real, {
    queue,
    createShaderModule(descriptor) {
      const code = String(descriptor.code);
      const module = real.createShaderModule(given(descriptor, { code }));
      MODULES.set(module, code);
      if (call) call.compiled++;
      return module;
    },
    createComputePipeline(descriptor) {
      const [desc, info] = pipelineOf(descriptor);
      const pipeline = real.createComputePipeline(desc);
      PIPELINES.set(pipeline, info);
      if (call) call.pipelines++;
      return pipeline;
    },
    createComputePipelineAsync(descriptor) {
      let desc, info;
      try { [desc, info] = pipelineOf(descriptor); } catch (e) { return Promise.reject(e); }
      const c = call;
      return real.createComputePipelineAsync(desc).then((pipeline) => {
        PIPELINES.set(pipeline, info);
        if (c) c.pipelines++;
        return pipeline;
      });
    },
    createBindGroupLayout(descriptor) {
      const entries = Array.from(descriptor.entries, layoutEntryOf);
      const layout = real.createBindGroupLayout(given(descriptor, { entries: entries.map(([e]) => e) }));
      LAYOUTS.set(layout, entries.map(([, b]) => b).filter((b) => b !== null).sort((a, b) => a - b));
      return layout;
    },
    createBindGroup(descriptor) {
      const layout = unwrap(descriptor.layout);
      const entries = Array.from(descriptor.entries, entryOf);
      const group = real.createBindGroup(given(descriptor, { layout, entries: entries.map(([e]) => e) }));
      // a layout not made here (pipeline.getBindGroupLayout: "auto") takes no dynamic offsets
      GROUPS.set(group, { entries: entries.map(([, seen]) => seen), dynamic: LAYOUTS.get(layout) || [] });
      return group;
    },
    createCommandEncoder(descriptor) { return encoderOf(real.createCommandEncoder(descriptor)); },
  });

  real.addEventListener("uncapturederror", (e) => {
    if (call) call.errors.push(`${(e.error?.constructor?.name) || "GPUError"}: ${e.error?.message}`);
  });

  function begin(plan) {
    const outputsOf = [];   // per pass of the plan that dispatches: its output bindings [{role, index, start, bytes}]
    const outputs = plan?.outputs && typeof plan.outputs === "object" ? plan.outputs : {};
    for (const p of (plan && Array.isArray(plan.passes) ? plan.passes : [])) {
      const w = p?.dispatch?.workgroups;
      if (!Array.isArray(w) || !w.every((n) => n > 0)) continue;
      outputsOf.push((Array.isArray(p.bindings) ? p.bindings : [])
        .filter((b) => b && b.buffer === "storage" && Object.hasOwn(outputs, b.arg) && ITEM[outputs[b.arg].dtype]
                && Array.isArray(outputs[b.arg].shape))
        .map((b) => {   // the part of the output the binding views: [byteOffset, byteOffset + bytes) of its bytes
          const whole = numel(outputs[b.arg].shape) * ITEM[outputs[b.arg].dtype];
          const start = Number.isInteger(b.byteOffset) ? b.byteOffset : 0;
          return { role: b.arg, index: b.index, start, bytes: Number.isInteger(b.bytes) ? b.bytes : whole - start };
        }));
    }
    const c = { dispatches: [], encoded: [], encodedRan: 0, compiled: 0, pipelines: 0, errors: [], captures: new Map(),
                made: [], outputsOf, ties: {} };
    call = c;
    return {
      /** Awaits the copies of the output bindings (each within the backstop). */
      async settle() {
        for (const got of c.captures.values()) {
          if (got.why) continue;
          const error = await settled(got.scope, "the host's copy of an output binding");
          if (error) { got.why = `output ${got.role}: the host could not copy its binding: ${message(error)}`; continue; }
          got.read = await settled(Promise.all(got.data), "the host's read-back of an output binding");
          const failed = got.read.find((r) => !(r instanceof Uint8Array));
          if (failed) got.why = `output ${got.role}: the host could not read its copy back: ${message(failed)}`;
        }
      },
      /** Whether `bytes`, what kernel() returned for `role`, are what the dispatched kernels left in its bindings. */
      tie(role, dtype, bytes) {
        if (!bytes.byteLength) return;
        const item = ITEM[dtype] || 1;
        const mine = [...c.captures.values()].filter((got) => got.role === role);
        const why = mine.find((got) => got.why || !got.read);
        if (!mine.length || why) {
          c.ties[role] = { why: mine.length ? why.why || `output ${role}: not read back`
            : `output ${role}: no dispatch of kernel() submitted on the page's device wrote it through the plan's bindings` };
          return;
        }
        let compared = 0;
        for (const got of mine) {
          for (const [i, [at, length]] of got.ranges.entries()) {
            const copy = got.read[i];
            const from = got.start + at;
            const n = Math.max(0, Math.min(length, got.start + got.bytes - from, bytes.byteLength - from));
            for (let k = 0; k < n; k++) {
              if (copy[k] !== bytes[from + k]) {
                c.ties[role] = { same: false, element: Math.floor((from + k) / item), elements: bytes.byteLength / item };
                return;
              }
            }
            compared += n;
          }
        }
        c.ties[role] = { same: true, bytes: compared, of: bytes.byteLength };
      },
      /** Stops recording: {dispatches (submitted, in order), unsubmitted, compiled, pipelines, shaders, errors, outputs}. */
      end() {
        if (call === c) call = null;
        for (const b of c.made) b.destroy();
        const shaders = [];
        const index = new Map();
        const shader = (code) => {
          if (code === null) return null;
          if (!index.has(code)) { index.set(code, shaders.length); shaders.push(code); }
          return index.get(code);
        };
        return {
          dispatches: c.dispatches.map((d) => ({ workgroups: d.workgroups, indirect: d.indirect, shader: shader(d.pipeline.code),
                                                  entryPoint: d.pipeline.entryPoint, constants: d.pipeline.constants })),
          unsubmitted: c.encoded.filter((d) => !d.submitted).length,
          compiled: c.compiled, pipelines: c.pipelines, shaders, errors: c.errors.slice(0, 20), outputs: c.ties,
        };
      },
    };
  }

  return { device, begin };
}

/**
 * The loader commands, for the page (page_runtime.js) and for runtime_host.mjs (Node, Deno): one host logic
 * every way a loader is run. `pack`/`unpack`: the transport's data refs; `requestAdapter`: how this runtime gets
 * its adapter (the page: navigator.gpu's default); `onLost(info)`: told when the device is lost.
 */
export function commands({ pack, unpack, requestAdapter = () => navigator.gpu.requestAdapter(), onLost = () => {} }) {
  return {
    async loaderDevice() {
      try {
        if (!DEVICE) {
          const adapter = await requestAdapter();
          if (!adapter) return { error: "navigator.gpu.requestAdapter() returned null" };
          const requiredFeatures = adapter.features.has("shader-f16") ? ["shader-f16"] : [];
          const device = await adapter.requestDevice({ requiredFeatures, requiredLimits: limitsOf(adapter.limits) });
          device.lost.then((info) => {
            if (DEVICE === device) { DEVICE = null; WATCH = null; KERNELS.clear(); }
            onLost(info);
          });
          DEVICE = device;
          WATCH = watchDevice(device);
          ADAPTER = infoOf(adapter);
          ADAPTER_FEATURES = [...adapter.features].sort();
        }
        return { features: [...DEVICE.features], limits: limitsOf(DEVICE.limits), adapter: ADAPTER,
                 adapterFeatures: ADAPTER_FEATURES };
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
        const kernel = await settled(module.getKernel({ versions: files }, { version, device: WATCH?.device }), "getKernel()");
        if (typeof kernel !== "function" || typeof kernel.plan !== "function") {
          return { error: { name: "LoaderInterface", message: "getKernel() did not resolve to a function with a plan method" } };
        }
        KERNELS.set(key, kernel);
        return { ok: true };
      } catch (e) { return { error: errorOf(e) }; }
    },

    // answers {plan | rejected, outputs | error | runRejected, gpu: what kernel() did on the page's device (see
    // watchDevice's end()), ms: {plan, run, watch}}
    async loaderRun(_d, key, inputs, options, planOnly, uploads) {
      const kernel = KERNELS.get(key);
      if (!kernel) return { error: { name: "LoaderHost", message: `no kernel ${key} in the page (loaderKernel first)` } };
      if (!WATCH) return { error: { name: "LoaderHost", message: "the page's device is gone (lost)" } };
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
        answer.plan = snapshot(await settled(kernel.plan(args, options), "kernel.plan()"));
      } catch (e) { answer.rejected = errorOf(e); }
      if (planOnly) return answer;
      const t1 = performance.now();
      let t2 = null;
      const call = WATCH.begin(answer.rejected ? null : answer.plan);
      try {
        const got = await settled(kernel(args, options), "kernel()");
        t2 = performance.now();
        if (answer.rejected) {
          answer.error = { name: "LoaderInconsistent", message: `kernel.plan() refused the call (${answer.rejected.message}) but kernel() ran it` };
        } else {
          if (!got || typeof got !== "object") throw new Error(`kernel() resolved to ${typeof got}, not {role: {data, shape, dtype}}`);
          await call.settle();
          // each output is compared with its binding's copy and packed in one synchronous step: what the suite gets
          // is what was compared
          const packed = [];
          for (const role of Object.keys(answer.plan.outputs || {})) {
            const { dtype, shape, bytes } = checkOutput(role, got[role]);
            call.tie(role, dtype, bytes);
            const bytesPacked = pack(bytes);
            bytesPacked.catch(() => null);
            packed.push([role, dtype, shape, bytesPacked]);
          }
          answer.outputs = {};
          for (const [role, dtype, shape, bytesPacked] of packed) answer.outputs[role] = [dtype, shape, await bytesPacked];
        }
      } catch (e) {
        if (!answer.rejected) answer.error = errorOf(e);
        else answer.runRejected = errorOf(e);
      } finally {
        answer.gpu = call.end();
      }
      const t3 = performance.now();
      answer.ms = { plan: t1 - t0, run: (t2 ?? t3) - t1, watch: t2 === null ? 0 : t3 - t2 };
      return answer;
    },

    loaderRelease(_d, keys) { for (const k of keys) KERNELS.delete(k); return { ok: true }; },
  };
}
