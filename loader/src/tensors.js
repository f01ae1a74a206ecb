// Tensors at the loader's boundary: {data: TypedArray, shape} in, {data, shape, dtype} out. float32 is a
// Float32Array; float16 a Float16Array where the JavaScript engine has one, else a Uint16Array of the f16 bits.
import { ContractError } from "./errors.js";
import { has, own } from "./own.js";

const HAS_F16 = typeof globalThis.Float16Array === "function";
const BYTES = { float32: 4, float16: 2, float64: 8, int8: 1, uint8: 1, int16: 2, int32: 4, uint32: 4, int64: 8,
                uint64: 8 };

const numelOf = (shape) => shape.reduce((a, b) => a * b, 1);

/** The dtype each typed-array kind stands for (Uint16Array: f16 bits): the manifest's type constraints then
 * accept or refuse it (a Float64Array is a float64 input, refused with reason "dtype" where T allows f32, f16). */
const KINDS = { Float32Array: "float32", Float16Array: "float16", Uint16Array: "float16", Float64Array: "float64",
                Int8Array: "int8", Uint8Array: "uint8", Int16Array: "int16", Int32Array: "int32", Uint32Array: "uint32",
                BigInt64Array: "int64", BigUint64Array: "uint64" };

/** The typed-array kinds each dtype accepts, by constructor name. */
const ACCEPTS = {};
for (const [kind, dtype] of Object.entries(KINDS)) (ACCEPTS[dtype] ??= []).push(kind);

/** The dtype a typed array stands for, or null. */
export function dtypeOf(data) {
  const kind = data?.constructor?.name;
  return own(KINDS, kind) ?? null;
}

/** Checks one input and returns {shape, dtype, bytes}; a ContractError naming the role otherwise. */
export function readInput(role, value) {
  if (value === null || value === undefined) return null;
  if (typeof value !== "object" || !("data" in value) || !("shape" in value)) {
    throw new ContractError(`input '${role}': expected {data: TypedArray, shape: [...]} or {buffer: GPUBuffer, ` +
                            `shape: [...], dtype}, got ${describe(value)}`, { reason: "argument", argument: role });
  }
  /** @type {{data: import("../types/index.js").TypedArray, shape: number[]}} */
  const { data, shape } = value;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new ContractError(`input '${role}': shape ${JSON.stringify(shape)} must be an array of non-negative integers`,
                            { reason: "shape", argument: role });
  }
  const kind = data?.constructor?.name;
  const dtype = value.dtype ?? dtypeOf(data);
  if (!ArrayBuffer.isView(data) || dtype === null || !has(ACCEPTS, dtype) || !ACCEPTS[dtype].includes(kind)) {
    const want = has(ACCEPTS, value.dtype) ? ACCEPTS[value.dtype].join(" or ")
                                           : "Float32Array (float32), Float16Array or Uint16Array (float16 bits)";
    throw new ContractError(`input '${role}': data is ${describe(data)}; expected ${want}`,
                            { reason: "data-type", argument: role });
  }
  const numel = numelOf(shape);
  if (data.length !== numel) {
    throw new ContractError(`input '${role}': shape ${JSON.stringify(shape)} has ${numel} elements but data has ` +
                            `${data.length}`, { reason: "data-length", argument: role });
  }
  return { shape: [...shape], dtype, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

const WGSL_NAMES = { f32: "float32", f16: "float16" };
const FACTS = new WeakMap();   // GPUBuffer -> [size, usage]: a buffer's never change (reading them calls WebGPU)
const STORAGE = 0x80;   // GPUBufferUsage.STORAGE (a constant of WebGPU: the loader plans where there is no WebGPU)

/** Checks one input given as {buffer: GPUBuffer, shape, dtype} (a tensor on the GPU: the first numel(shape) elements
 * of dtype of its buffer) and returns {shape, dtype, bytes: null, buffer, byteLength}; a ContractError naming the
 * role otherwise: the buffer must be a GPUBuffer with STORAGE usage and hold the tensor, its size rounded up to 4
 * bytes (what a storage binding takes). */
export function readGpuInput(role, value) {
  const { buffer, shape, dtype } = value;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new ContractError(`input '${role}': shape ${JSON.stringify(shape)} must be an array of non-negative integers`,
                            { reason: "shape", argument: role });
  }
  if (typeof dtype !== "string") {
    throw new ContractError(`input '${role}': a GPU buffer input needs its dtype ("float32" or "float16"), got ` +
                            `${describe(dtype)}`, { reason: "argument", argument: role });
  }
  let facts = buffer !== null && typeof buffer === "object" ? FACTS.get(buffer) : undefined;
  if (facts === undefined) {
    if (buffer === null || typeof buffer !== "object" || typeof buffer.size !== "number" ||
        typeof buffer.usage !== "number") {
      throw new ContractError(`input '${role}': buffer is ${describe(buffer)}, not a GPUBuffer`,
                              { reason: "argument", argument: role });
    }
    facts = [buffer.size, buffer.usage];
    if (globalThis.GPUBuffer && buffer instanceof globalThis.GPUBuffer) FACTS.set(buffer, facts);
  }
  const [size, usage] = facts;
  if (!(usage & STORAGE)) {
    throw new ContractError(`input '${role}': its buffer's usage (${usage}) lacks GPUBufferUsage.STORAGE, ` +
                            "which a kernel reads through", { reason: "buffer-usage", argument: role });
  }
  const name = own(WGSL_NAMES, dtype) ?? dtype;
  const numel = numelOf(shape);
  const byteLength = has(BYTES, name) ? numel * BYTES[name] : 0;
  const needs = byteLength === 0 ? 0 : Math.ceil(byteLength / 4) * 4;
  if (size < needs) {
    throw new ContractError(`input '${role}': shape ${JSON.stringify(shape)} of ${name} needs ${needs} bytes ` +
                            `(${byteLength} rounded up to 4), its buffer has ${size}`,
                            { reason: "buffer-size", argument: role });
  }
  return { shape: [...shape], dtype, bytes: null, buffer, byteLength };
}

/** An input given as {shape, dtype} only (for planning). */
export function readSpec(role, value) {
  if (!Array.isArray(value.shape) || typeof value.dtype !== "string") {
    throw new ContractError(`input '${role}': expected {shape, dtype} or {data, shape}, got ${describe(value)}`,
                            { reason: "argument", argument: role });
  }
  return { shape: value.shape, dtype: value.dtype, bytes: null };
}

/** An output's typed array over `bytes` (exactly numel elements of dtype). */
export function outputArray(bytes, dtype, numel) {
  const n = numel * BYTES[dtype];
  const copy = bytes.slice(0, n).buffer;
  if (dtype === "float32") return new Float32Array(copy);
  if (dtype !== "float16") throw new Error(`the loader runs float32 and float16 tensors, not ${dtype}`);
  return HAS_F16 ? new globalThis.Float16Array(copy) : new Uint16Array(copy);
}

export const outputBytes = (dtype, numel) => numel * BYTES[dtype];

/** @param {{length?: number} | null | undefined} x */
function describe(x) {
  if (x === null || x === undefined) return String(x);
  if (ArrayBuffer.isView(x)) return `a ${x.constructor.name} of ${x.length}`;
  if (Array.isArray(x)) return `an Array of ${x.length}`;
  return typeof x === "object" ? `an object with keys ${Object.keys(x).join(", ") || "none"}` : `a ${typeof x}`;
}
