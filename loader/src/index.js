// The reference loader of webgpu-kernel-conformance packages.
//
//   import { getKernel } from "@webgpu-kernels/loader";
//   const kernel = await getKernel("https://host/webgpu-kernels/com.microsoft.FastGelu", { version: 1 });
//   const { Y } = await kernel({ X: { data: XData, shape: [5] } });
//
// The interface a loader certified by the suite offers (docs/manual/js-loader.md): getKernel(source, options) and the
// kernel it resolves to, kernel(inputs, options) and kernel.plan(inputs, options).
import { ContractError } from "./errors.js";
import { Dispatcher, deviceProfile, openDevice } from "./gpu.js";
import { loadPackage } from "./package.js";
import { planCall, planSummary } from "./planner.js";
import { Renderer } from "./render.js";
import { outputArray, outputBytes, readInput, readSpec } from "./tensors.js";

export { ContractError, ExpressionError, KernelRuntimeError, PackageError } from "./errors.js";

const DISPATCHERS = new WeakMap();   // device -> Dispatcher: one pipeline cache per device, shared by its kernels

/** Resolves to `kernel`, an async function of the package's inputs.
 * source: a package URL (version N > 1 at `<source>@N`) or {versions: {N: {file: string | Uint8Array}}}.
 * options: version (default: the newest published), device (a GPUDevice; default: one of the first adapter, with
 * shader-f16 where it has it), fetch (for URLs).
 * @param {import("../types/index.js").PackageSource} source
 * @param {import("../types/index.js").GetKernelOptions} [options]
 * @returns {Promise<import("../types/index.js").Kernel>} */
export async function getKernel(source, { version, device, fetch } = {}) {
  const pkg = await loadPackage(source, { version, fetch });
  const renderer = new Renderer(pkg.templates, pkg.where);
  let devicePromise = device ? Promise.resolve(device) : null;
  const gpu = () => (devicePromise ??= openDevice());

  const callOf = (inputs, options, profile, needData = true) => {
    if (inputs === null || typeof inputs !== "object") {
      throw new ContractError("the inputs must be an object {role: {data, shape}}, got " +
                              `${inputs === null ? "null" : typeof inputs}`, { reason: "argument" });
    }
    /** @type {[string, any][]} */
    const tensors = [];   // [role, tensor]: Object.fromEntries below makes each an own property, whatever its name
    for (const [role, value] of Object.entries(inputs)) {
      if (!pkg.manifest.inputs.some((s) => s.role === role)) {
        const roles = pkg.manifest.inputs.map((s) => s.role).join(", ");
        throw new ContractError(`${pkg.manifest.opId} has no input '${role}'; inputs are ${roles}`,
                                { reason: "unknown-argument", argument: role });
      }
      tensors.push([role, !needData && value && !("data" in value) ? readSpec(role, value) : readInput(role, value)]);
    }
    const args = Object.fromEntries(tensors.map(([role, t]) => [role, t && { shape: t.shape, dtype: t.dtype }]));
    const plan = planCall(pkg.manifest, args, { profile, attributes: options.attributes, tunables: options.tunables });
    return { plan, tensors: Object.fromEntries(tensors) };
  };

  /** The plan of a call (variant, constants, bindings with uniforms, dispatch, outputs) without running it; an
   * input may be {shape, dtype} without data here. options: attributes, tunables, and limits/features to plan
   * for a stricter device than this one. */
  async function plan(inputs, options = {}) {
    const d = await gpu();
    return planSummary(callOf(inputs, options, deviceProfile(d, options), false).plan);
  }

  /** Runs the call: {role: {data, shape, dtype}} for every output the manifest derives. */
  async function kernel(inputs, options = {}) {
    const d = await gpu();
    const { plan: p, tensors } = callOf(inputs, options, deviceProfile(d, options));
    const texts = p.passes.map((pass) => renderer.render(p, pass));
    if (!DISPATCHERS.has(d)) DISPATCHERS.set(d, new Dispatcher(d));
    const sizes = Object.fromEntries(Object.entries(p.outputs)
      .map(([r, o]) => [r, outputBytes(o.dtype, numel(o.shape))]));
    const bytes = Object.fromEntries(Object.entries(tensors).filter(([, t]) => t).map(([r, t]) => [r, t.bytes]));
    const got = await DISPATCHERS.get(d).run(p, texts, bytes, sizes);
    return Object.fromEntries(Object.entries(p.outputs).map(([r, o]) => [r, {
      data: outputArray(got[r], o.dtype, numel(o.shape)), shape: [...o.shape], dtype: o.dtype }]));
  }

  kernel.plan = plan;
  /** WGSL of each pass of a call's plan, as the kernel would compile it. */
  kernel.render = async (inputs, options = {}) => {
    const d = await gpu();
    const { plan: p } = callOf(inputs, options, deviceProfile(d, options));
    return p.passes.map((pass) => renderer.render(p, pass));
  };
  kernel.manifest = pkg.manifest.raw;
  kernel.version = pkg.version;
  /** Pipelines compiled and passes dispatched so far on this kernel's device (every kernel of it together). */
  kernel.stats = async () => {
    const x = DISPATCHERS.get(await gpu());
    return { compilations: x ? x.compilations : 0, dispatches: x ? x.dispatches : 0 };
  };
  return kernel;
}

const numel = (shape) => shape.reduce((a, b) => a * b, 1);
