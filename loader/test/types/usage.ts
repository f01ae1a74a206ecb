// A TypeScript user's code against the three entries, type-checked by `npm test` (test/types.test.js) and never
// run: the card's lines, the errors a caller matches on, a planner and a host of @huggingface/jinja. Each
// `@ts-expect-error` is a misuse the types must refuse.
import {
  Batch, ContractError, PackageError, getKernel, type GpuTensor, type Kernel, type KernelStats, type PlanSummary,
} from "@webgpu-kernels/loader";
import { planCall, planSummary, readManifest } from "@webgpu-kernels/loader/plan";
import {
  Budget, BudgetError, BudgetedInterpreter, LITERALS, functions, renderBudgeted,
} from "@webgpu-kernels/loader/jinja";
import { Environment, Template } from "@huggingface/jinja";

export async function card(device: GPUDevice): Promise<Float32Array> {
  const kernel: Kernel = await getKernel("https://example.org/com.microsoft.FastGelu", { version: 1, device });
  const { Y } = await kernel({ X: { data: new Float32Array([-2, -1, 0, 1, 2]), shape: [5] } });
  const shape: number[] = Y.shape;
  const dtype: "float32" | "float16" = Y.dtype;
  // @ts-expect-error: a version is a number
  await getKernel("https://example.org/com.microsoft.FastGelu", { version: "1" });
  // @ts-expect-error: an input is {data, shape}
  await kernel({ X: [1, 2, 3] });
  return shape.length && dtype === "float32" ? (Y.data as Float32Array) : new Float32Array(0);
}

export async function chained(device: GPUDevice, x: Float32Array, weights: GPUBuffer): Promise<Float32Array> {
  const source = "https://example.org/com.microsoft.FastGelu";
  const [gelu, uncached] = [await getKernel(source, { device }), await getKernel(source, { device, cache: false })];
  await getKernel(source, { cache: { signatures: 16 } });
  const batch = new Batch();
  const h: GpuTensor = (await gelu({ X: { data: x, shape: [x.length] } }, { batch })).Y;
  const { Y } = await uncached({ X: h, bias: { buffer: weights, shape: [x.length], dtype: "float32" } },
                               { outputs: "gpu-buffer" });
  h.release();
  const pending: number = batch.pending;
  await batch.submit();
  const back = await Y.read();
  Y.release();
  const stats: KernelStats = await gelu.stats();
  const counted: number = stats.planned + stats.rendered + stats.cacheHits + stats.buffersReused + stats.submits;
  // @ts-expect-error: outputs left on the GPU have no data
  (await gelu({ X: h }, { outputs: "gpu-buffer" })).Y.data;
  // @ts-expect-error: outputs are "data" or "gpu-buffer"
  await gelu({ X: h }, { outputs: "cpu" });
  // @ts-expect-error: cache is a boolean or {signatures}
  await getKernel(source, { cache: 16 });
  return pending + counted ? (back.data as Float32Array) : new Float32Array(0);
}

export async function planned(files: { [file: string]: Uint8Array }): Promise<string> {
  const device = { limits: { maxComputeWorkgroupSizeX: 256 }, features: new Set(["shader-f16"]) };
  const kernel = await getKernel({ versions: { 1: files } }, { device, fetch: async () => new Response(null) });
  try {
    const plan: PlanSummary = await kernel.plan({ X: { shape: [8], dtype: "float32" } }, { tunables: { WG: 64 } });
    const [x, y, z] = plan.passes[0].dispatch.workgroups;
    return `${plan.variant} ${x * y * z} ${(await kernel.render({ X: null })).join("")}`;
  } catch (err) {
    if (err instanceof ContractError && err.reason === "no-variant") return Object.keys(err.failures ?? {}).join();
    if (err instanceof PackageError) return err.file ?? err.message;
    throw err;
  }
}

export function plannedInNode(raw: unknown): string {
  const manifest = readManifest(raw, "manifest.json");
  const profile = { limits: { maxComputeWorkgroupsPerDimension: 65535 }, features: ["shader-f16"] };
  const plan = planCall(manifest, { X: { shape: [4], dtype: "f32" }, Bias: null }, { profile });
  // @ts-expect-error: planning needs a profile
  planCall(manifest, { X: { shape: [4], dtype: "f32" } }, {});
  return planSummary(plan).variant + manifest.opId;
}

export function rendered(source: string): string {
  const budget = new Budget({ work: 1 << 22 });
  const env = new Environment();
  for (const [name, value] of Object.entries({ ...LITERALS, range: budget.range, ...functions(["shader-f16"]) })) {
    env.set(name, value);
  }
  new BudgetedInterpreter(env, budget);
  try {
    return renderBudgeted(new Template(source).parsed, { n: 4 }, budget);
  } catch (err) {
    if (err instanceof BudgetError) return `${err.limit}: over ${err.most}`;
    throw err;
  }
}
