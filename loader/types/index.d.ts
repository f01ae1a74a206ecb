// Types of the "." entry, for a page or an app that runs kernels: getKernel, the kernel it resolves to, the
// errors. Hand-written; `npm test` checks them with tsc, the sources against them (checkJs) and their names
// against what the modules export (README.md, "The interface").

/** A dtype name as the manifests write it (a call may also give the WGSL name: "f32", "f16", ...). */
export type Dtype =
  | "float32" | "float16" | "float64" | "bfloat16" | "int8" | "uint8" | "int16" | "uint16" | "int32" | "uint32"
  | "int64" | "uint64" | "bool";

/** A typed array: Float32Array for float32, Float16Array or Uint16Array (the f16 bits) for float16; any other
 * kind stands for its own dtype, which the manifest's type constraints then accept or refuse. */
export type TypedArray = ArrayBufferView & { readonly length: number };

/** A package's files handed over in memory: version -> file name -> its text or bytes (every published version
 * of the op, each with metadata.json, manifest.json and the templates). */
export interface PackageFiles {
  versions: { [version: number | string]: { [file: string]: Uint8Array | string } };
}

/** A package: the URL of its version-1 directory (version N at `<source>@N/`), or its files. */
export type PackageSource = string | PackageFiles;

/** What the loader reads of a device to plan: its limits and features. A GPUDevice is one; kernel() dispatches on
 * it and needs a GPUDevice, plan() and render() need no more than this. */
export interface DeviceLike {
  readonly limits: object;
  readonly features: Iterable<string>;
}

/** What the loader reads of a fetch response. */
export interface FetchedFile {
  readonly status: number;
  readonly ok: boolean;
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface GetKernelOptions {
  /** The version to load, 1 to 1000; the newest published when omitted. */
  version?: number;
  /** The device to run on; by default one of the first adapter, with shader-f16 where it has it. */
  device?: DeviceLike;
  /** Reads a file of a URL source (default: globalThis.fetch). */
  fetch?: (url: string) => Promise<FetchedFile>;
  /** What a call's signature determines (plan, WGSL, pipelines, uniform buffers, bind groups) kept and reused: true
   * (the default) for at most 256 signatures, least recently used dropped first; {signatures: n} for at most n;
   * false to make it afresh for every call (and take no buffer from the device's pool). Every call is answered alike
   * either way. */
  cache?: boolean | { signatures?: number };
}

/** An input: its data and shape (data.length = the product of shape). */
export interface Tensor {
  data: TypedArray;
  shape: number[];
}

/** An input already on the GPU: the first numel(shape) elements of dtype of `buffer`, which must have STORAGE usage
 * and at least numel(shape) * bytes per element, rounded up to 4. A GpuTensor is one. */
export interface GpuTensorInput {
  buffer: GPUBuffer;
  shape: number[];
  dtype: "float32" | "float16" | "f32" | "f16";
}

/** An output left on the GPU (options.outputs "gpu-buffer", or a batch's call): the caller owns `buffer` (the loader
 * neither reuses nor destroys it) until release(). `buffer` may be larger than the tensor. */
export interface GpuTensor {
  readonly buffer: GPUBuffer;
  readonly shape: number[];
  readonly dtype: "float32" | "float16";
  /** Whether release() was called. */
  readonly released: boolean;
  /** Its values, read back (submitting the batch that writes it, if not yet submitted). */
  read(): Promise<OutputTensor>;
  /** Gives its buffer back to the loader, once no call recorded and not yet submitted reads it. */
  release(): void;
}

/** An input given by shape and dtype alone: enough for kernel.plan(). */
export interface TensorSpec {
  shape: number[];
  dtype: Dtype | string;
}

/** An output: exactly numel(shape) elements of dtype. */
export interface OutputTensor {
  data: TypedArray;
  shape: number[];
  dtype: "float32" | "float16";
}

/** Inputs by role; an absent optional input is left out or null. */
export type Inputs<T = Tensor> = { [role: string]: T | null | undefined };

export interface CallOptions {
  /** The op's attributes by name. */
  attributes?: { [name: string]: number | boolean };
  /** Overrides of the manifest's tunables (integers in [0, 2**32)). */
  tunables?: { [name: string]: number };
  /** Plan for a stricter device than the kernel's: each limit the stricter of the two... */
  limits?: { [name: string]: number };
  /** ...and the features both have. */
  features?: string[];
  /** "data" (the default): outputs read back into typed arrays; "gpu-buffer": outputs left on the GPU. */
  outputs?: "data" | "gpu-buffer";
  /** Record the call into this batch instead of submitting it (its outputs stay on the GPU). */
  batch?: Batch;
}

/** A call whose outputs stay on the GPU. */
export type GpuCallOptions = CallOptions & ({ outputs: "gpu-buffer" } | { batch: Batch });

/** What a kernel and its device did so far. */
export interface KernelStats {
  /** The device's (every kernel on it together): pipelines compiled, passes dispatched, command buffers submitted,
   * buffers created, handed out again from its pool, destroyed, and free in its pool (count and bytes). */
  compilations: number;
  dispatches: number;
  submits: number;
  buffersCreated: number;
  buffersReused: number;
  buffersDestroyed: number;
  buffersFree: number;
  bytesFree: number;
  /** This kernel's: calls planned, passes rendered, renders answered from its rendered texts (a new signature whose
   * passes see what an earlier one's saw), calls answered from its cache, signatures cached and dropped. */
  planned: number;
  rendered: number;
  rendersReused: number;
  cacheHits: number;
  cacheEntries: number;
  cacheEvictions: number;
}

export interface Dispatch {
  threads: number;
  workgroupSize: number;
  workgroups: [number, number, number];
}

/** A binding of a planned pass, as the suite's Plan.as_dict() writes it. */
export interface PlannedBinding {
  index: number;
  name: string;
  buffer: "read-only-storage" | "storage" | "uniform";
  arg?: string;
  elementType?: string;
  bytes?: number;
  packing?: string;
  byteOffset?: number;
  length?: number;
  struct?: string;
  fields?: { [field: string]: number | number[] };
  /** The packed uniform struct, hex. */
  uniformBytes?: string;
}

export interface PlannedPass {
  id: string;
  name: string;
  shader: string;
  constants: { [name: string]: unknown };
  dispatch: Dispatch;
  bindings: PlannedBinding[];
}

/** A call's plan in the suite's Plan.as_dict() form, plus each pass's constants. */
export interface PlanSummary {
  variant: string;
  passes: PlannedPass[];
  outputs: { [role: string]: { shape: number[]; dtype: string } };
}

export interface Kernel {
  /** Runs the call, its outputs left on the GPU. */
  (inputs: Inputs<Tensor | GpuTensorInput>, options: GpuCallOptions): Promise<{ [role: string]: GpuTensor }>;
  /** Runs the call: every output the manifest derives, read back. */
  (inputs: Inputs<Tensor | GpuTensorInput>, options?: CallOptions & { outputs?: "data"; batch?: undefined }):
    Promise<{ [role: string]: OutputTensor }>;
  /** The plan without running it. */
  plan(inputs: Inputs<Tensor | TensorSpec | GpuTensorInput>, options?: CallOptions): Promise<PlanSummary>;
  /** The WGSL of each pass, as the kernel would compile it. */
  render(inputs: Inputs<Tensor | TensorSpec | GpuTensorInput>, options?: CallOptions): Promise<string[]>;
  /** What the kernel and its device did so far: counts, for tests and benchmarks. */
  stats(): Promise<KernelStats>;
  /** The manifest as published. */
  manifest: object;
  /** The version loaded. */
  version: number;
}

/** Resolves to the kernel of `source`; rejects with PackageError (a file missing or not the one published, a
 * version not published) or ExpressionError (a manifest expression that does not parse). */
export function getKernel(source: PackageSource, options?: GetKernelOptions): Promise<Kernel>;

/** The reasons of a refused call (what the golden files record; the buffer-* ones, of a GPU buffer input). */
export type ContractReason =
  | "no-variant" | "rank" | "dtype" | "mixed-dtype" | "missing-input" | "unknown-argument" | "argument" | "shape"
  | "data-type" | "data-length" | "attribute" | "missing-attribute" | "tunable" | "output-rank" | "dispatch"
  | "device-limit" | "binding-length" | "binding-range" | "binding-offset" | "buffer-size" | "buffer-usage"
  | "buffer-released" | "buffer-device";

/** Calls recorded into one command encoder and submitted once: kernel(inputs, { batch }) records a call (its outputs
 * stay on the GPU); submit() submits what was recorded since the last submission; reading an output of a call not
 * yet submitted submits the batch. A batch is of one device, its first call's. */
export class Batch {
  constructor();
  /** Calls recorded and not yet submitted. */
  readonly pending: number;
  /** Submits the calls recorded so far (after any still being recorded); rejects with KernelRuntimeError if WebGPU
   * refused any. */
  submit(): Promise<void>;
}

/** A call breaks the kernel's contract. */
export class ContractError extends Error {
  constructor(message: string, details?: { reason?: ContractReason; argument?: string | null;
                                           failures?: { [variant: string]: string } | null });
  name: "ContractError";
  reason: ContractReason;
  /** The role (or attribute, tunable) it concerns, if any. */
  argument: string | null;
  /** reason "no-variant": each variant id mapped to its first false predicate, with the values. */
  failures: { [variant: string]: string } | null;
}

/** A manifest expression failed: a defect of the manifest, never a refusal of the call. */
export class ExpressionError extends Error {
  constructor(message: string, where?: { pointer?: string; file?: string; source?: string });
  name: "ExpressionError";
  /** The JSON pointer of the expression in the manifest. */
  pointer: string;
  file: string;
  /** The message without the file, pointer and expression. */
  detail: string;
}

/** The package cannot be used: a file missing, unreadable or not the one published, a version not published, a
 * template that does not parse or renders over the budget. */
export class PackageError extends Error {
  constructor(message: string, where?: { file?: string | null });
  name: "PackageError";
  /** Where the file came from: its URL, or `version N/<name>` for files handed over. */
  file: string | null;
}

/** WebGPU refused or failed what the plan asked for (compilation, validation, out of memory). */
export class KernelRuntimeError extends Error {
  constructor(message: string, where?: { pass?: string | null });
  name: "KernelRuntimeError";
  pass: string | null;
}
