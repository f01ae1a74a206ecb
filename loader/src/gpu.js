// A plan dispatched on a GPUDevice: buffers per tensor, uniform buffers, pipelines cached per rendered text.
import { KernelRuntimeError } from "./errors.js";
import { roundUp } from "./layout.js";
import { has } from "./own.js";

const padded = (n) => Math.max(4, roundUp(n, 4));

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

export class Dispatcher {
  constructor(device) {
    this.device = device;
    this.pipelines = new Map();   // rendered text + binding layout -> GPUComputePipeline
    this.compilations = 0;
    this.dispatches = 0;
  }

  async pipeline(pass, text) {
    const layoutKey = pass.bindings.map((b) => b.buffer).join(",");
    const key = `${layoutKey}\n${text}`;
    if (!this.pipelines.has(key)) {
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
      this.pipelines.set(key, pipeline);
    }
    return this.pipelines.get(key);
  }

  /** Runs every pass of `plan` (texts: one rendered WGSL per pass); `inputs`: role -> Uint8Array;
   * `outputBytes`: role -> bytes. Returns role -> Uint8Array of the outputs. */
  async run(plan, texts, inputs, outputBytes) {
    const d = this.device;
    const usage = GPUBufferUsage;
    const owned = [];
    const buffer = (size, use, label) => {
      const b = d.createBuffer({ size, usage: use, label });
      owned.push(b);
      return b;
    };
    d.pushErrorScope("out-of-memory");
    d.pushErrorScope("validation");
    try {
      const tensors = new Map();   // role -> buffer (roles are the manifest's names: a Map has no inherited ones)
      for (const [role, bytes] of Object.entries(inputs)) {
        if (bytes.byteLength === 0) continue;
        tensors.set(role, buffer(padded(bytes.byteLength), usage.STORAGE | usage.COPY_DST, role));
        const data = bytes.byteLength % 4
          ? (() => { const p = new Uint8Array(padded(bytes.byteLength)); p.set(bytes); return p; })()
          : bytes;
        d.queue.writeBuffer(tensors.get(role), 0, data);
      }
      for (const [role, size] of Object.entries(outputBytes)) {
        if (size > 0) tensors.set(role, buffer(padded(size), usage.STORAGE | usage.COPY_SRC, role));
      }
      const encoder = d.createCommandEncoder();
      for (const [i, pass] of plan.passes.entries()) {
        const [x, y, z] = pass.dispatch.workgroups;
        if (x * y * z === 0) continue;
        const pipeline = await this.pipeline(pass, texts[i]);
        const entries = pass.bindings.map((b) => {
          if (b.buffer === "uniform") {
            const data = new Uint8Array(roundUp(Math.max(b.data.length, 16), 16));
            data.set(b.data);
            const u = buffer(data.length, usage.UNIFORM | usage.COPY_DST, `${pass.name}.${b.name}`);
            d.queue.writeBuffer(u, 0, data);
            return { binding: b.index, resource: { buffer: u, offset: 0, size: data.length } };
          }
          const t = tensors.get(b.arg);
          if (!t) {
            throw new KernelRuntimeError(`binding '${b.name}' would be zero-sized (argument '${b.arg}' is empty) ` +
                                         `but the pass dispatches ${pass.dispatch.threads} threads`,
                                         { pass: pass.name });
          }
          return { binding: b.index, resource: { buffer: t, offset: b.byteOffset, size: padded(b.bytes) } };
        });
        const group = d.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
        const cpass = encoder.beginComputePass({ label: pass.name });
        cpass.setPipeline(pipeline);
        cpass.setBindGroup(0, group);
        cpass.dispatchWorkgroups(x, y, z);
        cpass.end();
        this.dispatches++;
      }
      const reads = new Map();
      for (const [role, size] of Object.entries(outputBytes)) {
        if (size === 0) continue;
        reads.set(role, buffer(padded(size), usage.MAP_READ | usage.COPY_DST, `${role}.read`));
        encoder.copyBufferToBuffer(tensors.get(role), 0, reads.get(role), 0, padded(size));
      }
      d.queue.submit([encoder.finish()]);
      const validation = await d.popErrorScope();
      const memory = await d.popErrorScope();
      if (validation || memory) {
        throw new KernelRuntimeError(`WebGPU refused the run: ${(validation || memory).message}`);
      }
      const out = [];
      for (const [role, size] of Object.entries(outputBytes)) {
        if (size === 0) { out.push([role, new Uint8Array(0)]); continue; }
        const read = reads.get(role);
        await read.mapAsync(GPUMapMode.READ);
        out.push([role, new Uint8Array(read.getMappedRange().slice(0, size))]);
        read.unmap();
      }
      return Object.fromEntries(out);
    } catch (err) {
      await d.popErrorScope().catch(() => null);
      await d.popErrorScope().catch(() => null);
      throw err;
    } finally {
      for (const b of owned) b.destroy();
    }
  }
}
