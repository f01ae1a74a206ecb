// Tensors at the loader's boundary: {data: TypedArray, shape} in, {data, shape, dtype} out. float32 is a
// Float32Array; float16 a Float16Array where the JavaScript engine has one, else a Uint16Array of the f16 bits.
import { ContractError } from "./errors.js";

const HAS_F16 = typeof globalThis.Float16Array === "function";
const BYTES = { float32: 4, float16: 2 };

/** The typed-array kinds each dtype accepts, by constructor name. */
const ACCEPTS = { float32: ["Float32Array"], float16: ["Float16Array", "Uint16Array"] };

const numelOf = (shape) => shape.reduce((a, b) => a * b, 1);

/** The dtype a typed array stands for (Uint16Array: f16 bits), or null. */
export function dtypeOf(data) {
  const kind = data && data.constructor && data.constructor.name;
  return kind === "Float32Array" ? "float32" : kind === "Float16Array" || kind === "Uint16Array" ? "float16" : null;
}

/** Checks one input and returns {shape, dtype, bytes}; a ContractError naming the role otherwise. */
export function readInput(role, value) {
  if (value === null || value === undefined) return null;
  if (typeof value !== "object" || !("data" in value) || !("shape" in value)) {
    throw new ContractError(`input '${role}': expected {data: TypedArray, shape: [...]}, got ${describe(value)}`,
                            { reason: "argument", argument: role });
  }
  const { data, shape } = value;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new ContractError(`input '${role}': shape ${JSON.stringify(shape)} must be an array of non-negative integers`,
                            { reason: "shape", argument: role });
  }
  const kind = data && data.constructor && data.constructor.name;
  const dtype = value.dtype ?? dtypeOf(data);
  if (!ArrayBuffer.isView(data) || dtype === null || !(dtype in ACCEPTS) || !ACCEPTS[dtype].includes(kind)) {
    const want = value.dtype && ACCEPTS[value.dtype] ? ACCEPTS[value.dtype].join(" or ") : "Float32Array (float32), Float16Array or Uint16Array (float16 bits)";
    throw new ContractError(`input '${role}': data is ${describe(data)}; expected ${want}`, { reason: "data-type", argument: role });
  }
  const numel = numelOf(shape);
  if (data.length !== numel) {
    throw new ContractError(`input '${role}': shape ${JSON.stringify(shape)} has ${numel} elements but data has ${data.length}`,
                            { reason: "data-length", argument: role });
  }
  return { shape: [...shape], dtype, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/** An output's typed array over `bytes` (exactly numel elements of dtype). */
export function outputArray(bytes, dtype, numel) {
  const n = numel * BYTES[dtype];
  const copy = bytes.slice(0, n).buffer;
  if (dtype === "float32") return new Float32Array(copy);
  return HAS_F16 ? new globalThis.Float16Array(copy) : new Uint16Array(copy);
}

export const outputBytes = (dtype, numel) => numel * BYTES[dtype];

function describe(x) {
  if (x === null || x === undefined) return String(x);
  if (ArrayBuffer.isView(x)) return `a ${x.constructor.name} of ${x.length}`;
  if (Array.isArray(x)) return `an Array of ${x.length}`;
  return typeof x === "object" ? `an object with keys ${Object.keys(x).join(", ") || "none"}` : `a ${typeof x}`;
}
