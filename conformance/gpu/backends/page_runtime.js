// The page side of backends/page.py, the one runtime of every browser column: an object table keyed by
// integer ids (allocated in Python) and a batch runner, so one round trip carries many WebGPU calls.
// The transport is not its concern: Playwright hands batches to window.__wgpu.run over CDP (chromium.py),
// a served page fetches them from the suite's server and posts the answers back (served_page.js).
//
// A command is [op, devId, ...args]. devId != 0 puts the command under error scopes of that
// device; consecutive commands of one device share one set of scopes (a "segment"), and
// CHECKED ops get a segment of their own, so their errors are attributed to them exactly.
// Bytes travel as {b64: "..."} inline, or {blob: token} through the Python HTTP server
// (GET <blobBase><token> to upload, POST a Blob to download: both far faster than a big string).
"use strict";

(() => {
  const T = new Map();          // id -> GPU object
  const LOST = new Map();       // device id -> "reason: message"
  const UNCAPTURED = [];        // errors no scope caught (should stay empty)
  let EPOCH = 0;                // bumped by reset: the session the devices made since belong to
  // Read-back buffers mapped ahead: when one is mapped, every other unmapped MAP_READ buffer of its device starts
  // mapping too, so a run's several read-backs resolve together (Firefox resolves mappings on a ~100 ms timer:
  // one round of it per read-back otherwise). A buffer mapped ahead is unmapped before any submit or write.
  const AHEAD = new Map();      // buffer id -> [device, promise of true when mapped]
  const OWNER = new WeakMap();  // buffer -> its device
  const DESTROYED = new WeakSet();
  const EXTENDED = new Map();   // extension name -> promise of its commands added to OPS (the "extend" command)
  let INLINE_LIMIT = 128 * 1024;  // set by Python with each batch
  let BLOB_BASE = "blob/";        // relative to the page: the server's blob store (per page on a served one)
  const CHECKED = new Set(["createShaderModule", "createComputePipeline", "mapAsync", "readBuffer",
                           "requestDevice", "probeEncoderTimestamps", "workDone"]);
  const get = (id) => {
    const o = T.get(id);
    if (o === undefined) throw new Error(`object #${id} does not exist in the page (released or never created)`);
    return o;
  };

  async function pack(u8) {
    if (u8.byteLength <= INLINE_LIMIT) return { b64: u8.toBase64() };
    const token = `d${crypto.randomUUID()}`;
    const r = await fetch(BLOB_BASE + token, { method: "POST", body: new Blob([u8]) });
    if (!r.ok) throw new Error(`download of ${u8.byteLength} bytes failed: HTTP ${r.status}`);
    return { blob: token };
  }

  function unpack(ref, uploads) {
    if (ref.b64 !== undefined) return Uint8Array.fromBase64(ref.b64);
    const u8 = uploads.get(ref.blob);
    if (!u8) throw new Error(`upload ${ref.blob} missing`);
    return u8;
  }

  function mapAhead(d, except) {
    for (const [id, b] of T) {
      if (id === except || AHEAD.has(id) || !(b instanceof GPUBuffer) || OWNER.get(b) !== d || DESTROYED.has(b) ||
          !(b.usage & GPUBufferUsage.MAP_READ) || b.mapState !== "unmapped") continue;
      d.pushErrorScope("validation");   // nothing of a mapping ahead may land in the scopes of the batch
      AHEAD.set(id, [d, b.mapAsync(GPUMapMode.READ).then(() => true, () => false)]);
      d.popErrorScope().catch(() => null);
    }
  }

  async function unmapAhead(d) {   // before a submit or a write: what was mapped ahead is unmapped
    for (const [id, [dev, mapped]] of [...AHEAD]) {
      if (dev !== d) continue;
      AHEAD.delete(id);
      if (await mapped) { const b = T.get(id); if (b && !DESTROYED.has(b)) b.unmap(); }
    }
  }

  function infoOf(adapter) {
    const i = adapter.info, info = {};
    for (const k in i) { const v = i[k]; if (typeof v !== "object" && typeof v !== "function") info[k] = v; }
    return info;
  }

  function limitsOf(limits) {
    const out = {};
    for (const k in limits) if (typeof limits[k] === "number") out[k] = limits[k];
    return out;
  }

  const OPS = {
    async adapterInfo() {
      const a = await navigator.gpu.requestAdapter();
      if (!a) throw new Error("navigator.gpu.requestAdapter() returned null: WebGPU is not available in this browser");
      return { info: infoOf(a), features: [...a.features], limits: limitsOf(a.limits),
               userAgent: navigator.userAgent, wgsl: [...navigator.gpu.wgslLanguageFeatures] };
    },
    async requestDevice(_d, id, label, requiredFeatures, requiredLimits) {
      // a fresh adapter each time: an adapter can give out only one device
      const a = await navigator.gpu.requestAdapter();
      if (!a) throw new Error("navigator.gpu.requestAdapter() returned null");
      const dev = await a.requestDevice({ label, requiredFeatures, requiredLimits });
      T.set(id, dev);
      const epoch = EPOCH;
      dev.lost.then((i) => { if (epoch === EPOCH) LOST.set(id, `${i.reason}: ${i.message}`); });
      dev.onuncapturederror = (e) => {
        if (epoch === EPOCH) UNCAPTURED.push({ dev: id, message: `${e.error.constructor.name}: ${e.error.message}` });
      };
      return { features: [...dev.features], limits: limitsOf(dev.limits) };
    },
    async probeEncoderTimestamps(d) {
      // Chromium exposes GPUCommandEncoder.writeTimestamp with developer features; does it really work?
      if (!d.features.has("timestamp-query")) return "no timestamp-query";
      const e = d.createCommandEncoder();
      if (typeof e.writeTimestamp !== "function") return "GPUCommandEncoder.writeTimestamp is not exposed";
      d.pushErrorScope("validation");
      const qs = d.createQuerySet({ type: "timestamp", count: 2 });
      const res = d.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      const rb = d.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      e.writeTimestamp(qs, 0);
      e.writeTimestamp(qs, 1);
      e.resolveQuerySet(qs, 0, 2, res, 0);
      e.copyBufferToBuffer(res, 0, rb, 0, 16);
      d.queue.submit([e.finish()]);
      const err = await d.popErrorScope();
      try {
        if (err) return err.message;
        await rb.mapAsync(GPUMapMode.READ);
        const t = new BigUint64Array(rb.getMappedRange());
        return t[0] > 0n && t[1] >= t[0] ? "ok" : `timestamps read back as ${t[0]}, ${t[1]}`;
      } catch (x) { return `${x.name}: ${x.message}`; }
      finally { qs.destroy(); res.destroy(); rb.destroy(); }
    },
    async extend(_d, name) {
      // more commands from a module the suite's server hands out (page_modules.EXTENSIONS, each registered by an
      // implementation that runs in the page: "ort", "loader"), given this runtime's byte helpers; loaded once per page
      if (!EXTENDED.has(name)) EXTENDED.set(name, import(new URL(`ext/${name}.mjs`, location.href).href)
        .then((m) => Object.assign(OPS, m.commands({ pack, unpack }))));
      await EXTENDED.get(name);
    },
    drop(_d, ids) { for (const id of ids) { T.delete(id); AHEAD.delete(id); } },
    reset() {  // a new session on a page that lived through the last one: nothing of it is reachable any more
      EPOCH++;   // late losses and errors of the old devices must not land on the new session's ids
      for (const o of T.values()) if (o instanceof GPUDevice) o.destroy();
      T.clear(); LOST.clear(); AHEAD.clear(); UNCAPTURED.length = 0;
    },
    destroy(_d, id) { const o = T.get(id); if (o) { DESTROYED.add(o); AHEAD.delete(id); o.destroy(); } },

    createBuffer(d, id, label, size, usage, mappedAtCreation) {
      const b = d.createBuffer({ label, size, usage, mappedAtCreation });
      OWNER.set(b, d);
      T.set(id, b);
    },
    createBufferWithData(d, id, label, size, usage, data, uploads) {
      const b = d.createBuffer({ label, size, usage, mappedAtCreation: true });
      new Uint8Array(b.getMappedRange()).set(unpack(data, uploads));
      b.unmap();
      T.set(id, b);
    },
    async writeBuffer(d, id, offset, data, uploads) {
      await unmapAhead(d);
      d.queue.writeBuffer(get(id), offset, unpack(data, uploads));
    },
    async mapAsync(d, id, mode, offset, size) {
      const b = get(id);
      size = size ?? undefined;  // null would mean 0 bytes to WebGPU; undefined means "to the end"
      const ahead = AHEAD.get(id);
      AHEAD.delete(id);
      if (mode & GPUMapMode.READ) mapAhead(d, id);
      if (!(ahead && await ahead[1])) await b.mapAsync(mode, offset, size);   // else: mapped whole, ahead
      if (mode & GPUMapMode.READ) return await pack(new Uint8Array(b.getMappedRange(offset, size)).slice());
      return null;
    },
    unmap(_d, id, range, writes, uploads) {
      // writes made with write_mapped are sent with the unmap: [bufferOffset, data], range = the mapped [offset, size]
      const b = get(id);
      AHEAD.delete(id);
      if (writes.length) {
        const view = new Uint8Array(b.getMappedRange(range[0], range[1] ?? undefined));
        for (const [offset, data] of writes) view.set(unpack(data, uploads), offset - range[0]);
      }
      b.unmap();
    },
    async readBuffer(d, id, offset, size) {
      const src = get(id);
      const staging = d.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const e = d.createCommandEncoder();
      e.copyBufferToBuffer(src, offset, staging, 0, size);
      d.queue.submit([e.finish()]);
      try {
        await staging.mapAsync(GPUMapMode.READ);
        return await pack(new Uint8Array(staging.getMappedRange()).slice());
      } finally { staging.destroy(); }
    },
    async workDone(d) { await d.queue.onSubmittedWorkDone(); },

    async createShaderModule(d, id, label, code) {
      const m = d.createShaderModule({ label, code });
      T.set(id, m);
      const info = await m.getCompilationInfo();
      return info.messages.map((x) => ({ type: x.type, message: x.message, line: x.lineNum, col: x.linePos }));
    },
    createBindGroupLayout(d, id, label, entries) { T.set(id, d.createBindGroupLayout({ label, entries })); },
    createPipelineLayout(d, id, label, layouts) {
      T.set(id, d.createPipelineLayout({ label, bindGroupLayouts: layouts.map(get) }));
    },
    createComputePipeline(d, id, label, layout, module, entryPoint, constants) {
      T.set(id, d.createComputePipeline({
        label, layout: layout === "auto" ? "auto" : get(layout),
        compute: { module: get(module), entryPoint, constants },
      }));
    },
    getBindGroupLayout(_d, id, pipeline, index) { T.set(id, get(pipeline).getBindGroupLayout(index)); },
    createBindGroup(d, id, label, layout, entries) {
      T.set(id, d.createBindGroup({
        label, layout: get(layout),
        entries: entries.map(([binding, buf, offset, size]) =>
          ({ binding, resource: { buffer: get(buf), offset, size: size === null ? undefined : size } })),
      }));
    },
    createQuerySet(d, id, label, type, count) { T.set(id, d.createQuerySet({ label, type, count })); },

    createCommandEncoder(d, id, label) { T.set(id, d.createCommandEncoder({ label })); },
    beginComputePass(_d, id, enc, label, tw) {
      const desc = { label };
      if (tw) desc.timestampWrites = { querySet: get(tw[0]), beginningOfPassWriteIndex: tw[1] ?? undefined,
                                       endOfPassWriteIndex: tw[2] ?? undefined };
      T.set(id, get(enc).beginComputePass(desc));
    },
    setPipeline(_d, pass, p) { get(pass).setPipeline(get(p)); },
    setBindGroup(_d, pass, index, group, offsets) { get(pass).setBindGroup(index, get(group), offsets); },
    dispatch(_d, pass, x, y, z) { get(pass).dispatchWorkgroups(x, y, z); },
    dispatchIndirect(_d, pass, buf, offset) { get(pass).dispatchWorkgroupsIndirect(get(buf), offset); },
    end(_d, pass) { get(pass).end(); T.delete(pass); },
    copyBufferToBuffer(_d, enc, src, so, dst, dof, size) { get(enc).copyBufferToBuffer(get(src), so, get(dst), dof, size); },
    clearBuffer(_d, enc, buf, offset, size) { get(enc).clearBuffer(get(buf), offset, size ?? undefined); },
    resolveQuerySet(_d, enc, qs, first, count, dst, offset) { get(enc).resolveQuerySet(get(qs), first, count, get(dst), offset); },
    writeTimestamp(_d, enc, qs, index) { get(enc).writeTimestamp(get(qs), index); },
    finish(_d, enc, id, label) { T.set(id, get(enc).finish({ label })); T.delete(enc); },
    async submit(d, ids) { await unmapAhead(d); d.queue.submit(ids.map(get)); for (const id of ids) T.delete(id); },
  };

  const pushScopes = (d) => { d.pushErrorScope("internal"); d.pushErrorScope("out-of-memory"); d.pushErrorScope("validation"); };
  const popScopes = (d) => Promise.all([d.popErrorScope(), d.popErrorScope(), d.popErrorScope()]);
  const KIND = { GPUValidationError: "validation error", GPUOutOfMemoryError: "out of memory", GPUInternalError: "internal error" };

  /** Run one batch; answer {results: {index: value}, errors: [...], lost: {devId: text}}. */
  async function run(cmds, uploadTokens, inlineLimit) {
    INLINE_LIMIT = inlineLimit;
    const uploads = new Map(await Promise.all(uploadTokens.map(async (t) => {
      const r = await fetch(BLOB_BASE + t);
      if (!r.ok) throw new Error(`upload ${t} failed: HTTP ${r.status}`);
      return [t, new Uint8Array(await r.arrayBuffer())];
    })));
    const results = {}, errors = [], pending = [], touched = new Set();
    let seg = null;  // {dev, devId, first, ops}
    const close = () => { if (seg) { pending.push([seg, popScopes(seg.dev)]); seg = null; } };
    for (let i = 0; i < cmds.length; i++) {
      const [op, devId, ...args] = cmds[i];
      const fn = OPS[op];
      let d = null;
      try {
        if (!fn) throw new Error(`unknown op ${op}`);
        if (devId) {
          d = get(devId);
          touched.add(devId);
          if (!seg || seg.devId !== devId || CHECKED.has(op)) { close(); pushScopes(d); seg = { dev: d, devId, first: i, ops: [] }; }
          seg.ops.push(op);
        }
        let r = fn(d, ...args, uploads);
        if (r instanceof Promise) r = await r;
        if (r !== undefined) results[i] = r;
      } catch (e) {
        errors.push({ index: i, op, kind: "exception", message: `${e.name}: ${e.message}` });
      }
      if (op === "requestDevice") touched.add(args[0]);
      if (CHECKED.has(op)) close();
    }
    close();
    for (const [s, p] of pending) {
      let popped;
      try { popped = await p; } catch (e) { popped = [{ constructor: { name: "exception" }, message: `popErrorScope: ${e.message}` }]; }
      for (const e of popped) {
        if (e) errors.push({ index: s.first, op: s.ops.join(","), kind: KIND[e.constructor.name] || e.constructor.name,
                             message: e.message });
      }
    }
    while (UNCAPTURED.length) {
      const u = UNCAPTURED.shift();
      errors.push({ index: -1, op: "uncaptured", kind: "uncaptured error", message: u.message });
    }
    const lost = {};
    for (const id of touched) if (LOST.has(id)) lost[id] = LOST.get(id);
    return { results, errors, lost };
  }

  window.__wgpu = { run, objects: () => T.size, setBlobBase: (b) => { BLOB_BASE = b; } };
})();
