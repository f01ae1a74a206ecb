// The manifest functions (specs/README.md, "Functions"), bound for @huggingface/jinja. Used by the loader and by
// the suite's portable-subset check (conformance/tools/jinja_js.mjs), so both evaluate the same definitions.
// @huggingface/jinja hands a function its arguments' `.value`: a list arrives as a list of runtime values.
import { has } from "./own.js";

export const unwrap = (x) => (x !== null && typeof x === "object" && "type" in x && "value" in x ? x.value : x);

/** Bytes per element by WGSL dtype name (conformance/engine/dtypes.py). */
export const WGSL_BYTES = { f32: 4, f16: 2, f64: 8, bf16: 2, i8: 1, u8: 1, i16: 2, u16: 2, i32: 4, u32: 4,
                            i64: 8, u64: 8, bool: 1 };

function shape(s, fn) {
  if (!Array.isArray(s)) throw new Error(`${fn}() expects a shape, got ${JSON.stringify(s)}`);
  return s.map(unwrap);
}

function integer(x, fn) {
  if (!Number.isInteger(x)) throw new Error(`${fn}() expects integers, got ${x}`);
  return x;
}

function numbers(args, fn) {
  if (args.length < 1 || !args.every((a) => typeof a === "number")) throw new Error(`${fn}() expects numbers`);
  return args;
}

/** The functions in scope; `f16Ok` bound to the device's features. */
export function functions(features, bytes = WGSL_BYTES) {
  return {
    numel: (s) => shape(s, "numel").reduce((a, b) => a * b, 1),
    dim: (s, i) => {
      const d = shape(s, "dim");
      if (!Number.isInteger(i) || i < 0 || i >= d.length) throw new Error(`dim() axis ${i} is out of range`);
      return d[i];
    },
    dtypeBytes: (t) => {
      if (!has(bytes, t)) throw new Error(`dtypeBytes() does not know dtype ${t}`);
      return bytes[t];
    },
    f16Ok: (t) => {
      if (typeof t !== "string") throw new Error(`f16Ok() expects a dtype name, got ${t}`);
      return t === "f32" || (t === "f16" && features.includes("shader-f16"));
    },
    ceilDiv: (a, b) => {
      if (integer(b, "ceilDiv") <= 0) throw new Error(`ceilDiv() divisor must be positive, got ${b}`);
      return Math.ceil(integer(a, "ceilDiv") / b);
    },
    min: (...a) => Math.min(...numbers(a, "min")),
    max: (...a) => Math.max(...numbers(a, "max")),
  };
}

/** Jinja's literal names, which @huggingface/jinja reads as identifiers. */
export const LITERALS = { true: true, false: false, none: null, True: true, False: false, None: null };
