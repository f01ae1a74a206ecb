// WGSL memory layout and dispatch geometry (the rules of conformance/engine/layout.py, specs/README.md "Planning").
import { WGSL_BYTES } from "./functions.js";
import { own } from "./own.js";

// (alignment, size, component kind, component count) per host-shareable uniform field type (WGSL §14.4.1)
const FIELD_LAYOUT = {};
for (const s of ["u32", "i32", "f32"]) {
  FIELD_LAYOUT[s] = [4, 4, s, 1];
  FIELD_LAYOUT[`vec2<${s}>`] = [8, 8, s, 2];
  FIELD_LAYOUT[`vec4<${s}>`] = [16, 16, s, 4];
}

const ELEMENT = /^(?:(f16|f32|i32|u32)|vec([234])<(f16|f32|i32|u32)>)$/;

export const roundUp = (value, multiple) => Math.ceil(value / multiple) * multiple;

/** "vec4<f16>" -> ["f16", 4]; "f32" -> ["f32", 1]; throws otherwise.
 * @param {string} text @returns {[string, number]} */
export function elementType(text) {
  const m = ELEMENT.exec(String(text).trim());
  if (!m) throw new Error(`"${text}" is not a storage element type (f16, f32, i32, u32 or vecN of one)`);
  return m[1] ? [m[1], 1] : [m[3], Number(m[2])];
}

/** Array stride of an element type (vec3 padded to vec4). */
export function elementStride(text) {
  const [scalar, n] = elementType(text);
  return WGSL_BYTES[scalar] * (n === 3 ? 4 : n);
}

const RANGE = { u32: [0, 2 ** 32 - 1], i32: [-(2 ** 31), 2 ** 31 - 1] };

/** A uniform struct's bytes: each field at its alignment, the size rounded to the struct's alignment.
 * `fields`: [[name, type, value], ...]. Throws naming the field when a value does not fit its type. */
export function packStruct(fields) {
  let size = 0;
  let maxAlign = 1;
  const placed = [];
  for (const [name, type, value] of fields) {
    const layout = own(FIELD_LAYOUT, type);
    if (!layout) throw new Error(`field '${name}': type ${type} is not a uniform field type`);
    const [align, bytes, kind, count] = layout;
    maxAlign = Math.max(maxAlign, align);
    size = roundUp(size, align);
    const values = count > 1 ? value : [value];
    if (!Array.isArray(values) || values.length !== count) {
      throw new Error(`field '${name}' of type ${type} needs ${count} value(s), got ${JSON.stringify(value)}`);
    }
    placed.push([size, kind, values, name, type]);
    size += bytes;
  }
  const out = new DataView(new ArrayBuffer(roundUp(size, maxAlign)));
  for (const [offset, kind, values, name, type] of placed) {
    values.forEach((v, i) => {
      if (typeof v !== "number" || (kind !== "f32" && !Number.isInteger(v)) ||
          (kind !== "f32" && (v < RANGE[kind][0] || v > RANGE[kind][1]))) {
        throw new Error(`field '${name}' of type ${type}: value ${JSON.stringify(v)} does not fit`);
      }
      const at = offset + 4 * i;
      if (kind === "f32") out.setFloat32(at, v, true);
      else if (kind === "u32") out.setUint32(at, v, true);
      else out.setInt32(at, v, true);
    });
  }
  return new Uint8Array(out.buffer);
}

/** Workgroup counts [x, y, z] covering `groups`, none above `maxPerDimension`; x as large as possible, y (then z)
 * absorbing the rest. null when it cannot fit. */
export function splitWorkgroups(groups, maxPerDimension) {
  if (groups === 0) return [0, 0, 0];
  if (maxPerDimension < 1) return null;
  const yz = Math.ceil(groups / maxPerDimension);
  const z = Math.ceil(yz / maxPerDimension);
  if (z > maxPerDimension) return null;
  const y = Math.ceil(yz / z);
  const x = Math.ceil(groups / (y * z));
  return [x, y, z];
}

const SPACE = { "read-only-storage": "storage, read", storage: "storage, read_write", uniform: "uniform" };

export const bindingDeclaration = (index, name, bufferType, typeText) =>
  `@group(0) @binding(${index}) var<${SPACE[bufferType]}> ${name}: ${typeText};`;

export function structDeclaration(name, fields) {
  const body = fields.map(([f, t]) => `  ${f}: ${t},\n`).join("");
  return `struct ${name} {\n${body}};`;
}

export const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join("");
