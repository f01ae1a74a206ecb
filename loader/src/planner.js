// A call -> a plan (variant, constants, bindings with packed uniforms, dispatch split, outputs), or a
// ContractError naming the failed predicate: the steps of specs/README.md "Planning", as the suite's
// conformance/engine/planner.py takes them, so that both plan every call alike.
import { ContractError, ExpressionError } from "./errors.js";
import { Scope, formatValue, scopeVariables } from "./expressions.js";
import {
  bindingDeclaration, elementStride, elementType, hex, packStruct, splitWorkgroups, structDeclaration,
} from "./layout.js";
import { has, own } from "./own.js";

/** Manifest (ONNX) dtype name -> WGSL name. */
export const WGSL_DTYPE = { float32: "f32", float16: "f16", float64: "f64", bfloat16: "bf16", int8: "i8", uint8: "u8",
                            int16: "i16", uint16: "u16", int32: "i32", uint32: "u32", int64: "i64", uint64: "u64",
                            bool: "bool" };
const FROM_WGSL = Object.fromEntries(Object.entries(WGSL_DTYPE).map(([k, v]) => [v, k]));
const MAX_NUMEL = 2 ** 53;
const MAX_RANK = 8;

/** `inputs`: role -> {shape, dtype} (dtype a manifest name, "float32", or WGSL, "f32") or null when absent.
 * `profile`: {limits, features} of the device. Returns the plan; throws ContractError for a refused call and
 * ExpressionError for a defect of the manifest.
 * @param {any} manifest @param {any} inputs @param {Partial<import("../types/plan.js").PlanOptions>} [options] */
export function planCall(manifest, inputs, { profile, attributes = {}, tunables = {} } = {}) {
  const call = makeCall(manifest, inputs, profile, attributes, tunables);
  const typevars = checkTypes(manifest, call);
  const outputs = outputShapes(manifest, call, typevars);
  const outShapes = Object.fromEntries(Object.entries(outputs).map(([r, o]) => [r, o.shape]));
  const values = scopeValues(manifest, call, typevars, outShapes);
  const variables = scopeVariables(values, [...profile.features]);
  /** @type {{[variant: string]: string}} */
  const failures = {};
  let chosen = null;
  let scope = null;
  for (const variant of manifest.variants) {
    scope = new Scope(variables, variant.rules, manifest.file);
    const failed = firstFalse(variant, scope, manifest);
    if (failed === null) { chosen = variant; break; }
    failures[variant.id] = scope.explainFalse(failed);
  }
  const violation = rankViolation(manifest, call);
  if (chosen === null) {
    const lines = Object.entries(failures).map(([id, why]) => `  ${id}: ${why}`).join("\n");
    const note = violation ? `\n  (contract: ${violation[1]})` : "";
    throw new ContractError(`no variant of ${manifest.opId} accepts this call:\n${lines}${note}`,
                            { reason: "no-variant", argument: violation ? violation[0] : null, failures });
  }
  if (violation) throw new ContractError(violation[1], { reason: "rank", argument: violation[0] });
  const constants = Object.fromEntries(chosen.constantNames.map((name) => [name, scope.evaluate({
    node: { type: "Identifier", value: name }, source: name, pointer: chosen.rules.get(name).pointer })]));
  const passes = chosen.passes.map((p) => planPass(manifest, chosen, p, scope, constants, call, values));
  return { op: manifest.opId, variant: chosen.id, passes, outputs };
}

function firstFalse(variant, scope, manifest) {
  for (const expr of variant.when) {
    const value = scope.evaluate(expr);
    if (typeof value !== "boolean") {
      throw new ExpressionError(`a when predicate must be true or false, got ${formatValue(value)}`,
                                { pointer: expr.pointer, file: manifest.file });
    }
    if (!value) return expr;
  }
  return null;
}

// -- the call ------------------------------------------------------------------------------------
function makeCall(manifest, inputs, profile, attributes, tunables) {
  if (!profile?.limits || !profile.features) {
    throw new TypeError("planCall needs a profile {limits, features}");
  }
  const roles = manifest.inputs.map((s) => s.role);
  for (const name of Object.keys(inputs || {})) {
    if (!roles.includes(name)) {
      const also = Object.keys(manifest.attributes).length
        ? `; attributes are ${Object.keys(manifest.attributes).join(", ")} (pass them in options.attributes)` : "";
      throw new ContractError(`${manifest.opId} has no input '${name}'; inputs are ${roles.join(", ")}${also}`,
                              { reason: "unknown-argument", argument: name });
    }
  }
  const args = Object.fromEntries(roles.map((role) => {
    const a = own(inputs, role);
    if (a === undefined || a === null) return [role, null];
    return [role, { shape: checkShape(a.shape, role), dtype: dtypeName(a.dtype, role) }];
  }));
  const given = Object.entries(tunables || {});
  for (const [key, value] of given) {
    if (!has(manifest.tunables, key)) {
      throw new ContractError(`${manifest.opId} has no tunable '${key}'; tunables are ` +
                              `${Object.keys(manifest.tunables).join(", ") || "none"}`,
                              { reason: "tunable", argument: key });
    }
    if (!Number.isInteger(value) || value < 0 || value >= 2 ** 32) {
      throw new ContractError(`tunable '${key}' must be an integer in [0, 2**32), got ${JSON.stringify(value)}`,
                              { reason: "tunable", argument: key });
    }
  }
  const merged = Object.fromEntries([...Object.entries(manifest.tunables), ...given]);
  return { inputs: args, profile, tunables: merged, attributes: resolveAttributes(manifest, attributes || {}) };
}

function dtypeName(value, role) {
  if (has(WGSL_DTYPE, value)) return value;
  if (has(FROM_WGSL, value)) return FROM_WGSL[value];
  throw new ContractError(`argument '${role}': unknown dtype ${JSON.stringify(value)}; expected one of ` +
                          `${Object.keys(WGSL_DTYPE).join(", ")}`,
                          { reason: "dtype", argument: role });
}

function checkShape(shape, role) {
  if (!Array.isArray(shape)) {
    throw new ContractError(`argument '${role}': shape must be an array of integers, got ${JSON.stringify(shape)}`,
                            { reason: "shape", argument: role });
  }
  if (shape.length > MAX_RANK) {
    throw new ContractError(`argument '${role}': rank ${shape.length} exceeds the maximum ${MAX_RANK}`,
                            { reason: "shape", argument: role });
  }
  if (!shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new ContractError(`argument '${role}': shape ${JSON.stringify(shape)} must hold non-negative integers`,
                            { reason: "shape", argument: role });
  }
  const numel = shape.reduce((a, b) => a * b, 1);
  if (numel > MAX_NUMEL) {
    throw new ContractError(`argument '${role}': shape ${JSON.stringify(shape)} has ${numel} elements, more than ` +
                            `${MAX_NUMEL}`, { reason: "shape", argument: role });
  }
  return [...shape];
}

function attributeValue(type, value) {
  if (type === "bool" && typeof value === "boolean") return value;
  if (type === "int" && Number.isInteger(value)) return value;
  if (type === "float" && typeof value === "number") {
    if (Number.isFinite(value)) return value;
    throw new Error(`float attribute value ${value} is not finite`);
  }
  throw new Error(`expected ${type === "int" ? "an" : "a"} ${type}, got ${JSON.stringify(value)} (${typeof value})`);
}

function resolveAttributes(manifest, given) {
  for (const name of Object.keys(given)) {
    if (!has(manifest.attributes, name)) {
      throw new ContractError(`${manifest.opId} has no attribute '${name}'; attributes are ` +
                              `${Object.keys(manifest.attributes).join(", ") || "none"}`,
                              { reason: "unknown-argument", argument: name });
    }
  }
  return Object.fromEntries(Object.entries(manifest.attributes).map(([name, spec]) => {
    if (!has(given, name)) {
      if (spec.default === undefined) {
        throw new ContractError(`attribute '${name}' is required by ${manifest.opId} (it has no default)`,
                                { reason: "missing-attribute", argument: name });
      }
      return [name, spec.default];
    }
    try {
      return [name, attributeValue(spec.type, given[name])];
    } catch (err) {
      throw new ContractError(`attribute '${name}': ${err.message}`, { reason: "attribute", argument: name });
    }
  }));
}

/** Each bound type variable's WGSL dtype (a Map: type variables are the manifest's names). */
function checkTypes(manifest, call) {
  const bound = new Map();
  for (const spec of manifest.inputs) {
    const arg = call.inputs[spec.role];
    if (arg === null) {
      if (!spec.optional) {
        throw new ContractError(`input '${spec.role}' is required by ${manifest.opId} but absent`,
                                { reason: "missing-input", argument: spec.role });
      }
      continue;
    }
    const allowed = own(manifest.typeConstraints, spec.typevar);
    if (!allowed.includes(arg.dtype)) {
      throw new ContractError(`input '${spec.role}' has dtype ${arg.dtype}; type ${spec.typevar} allows ` +
                              `${allowed.join(", ")}`,
                              { reason: "dtype", argument: spec.role });
    }
    if (bound.has(spec.typevar) && bound.get(spec.typevar)[1] !== arg.dtype) {
      const [other, otherDtype] = bound.get(spec.typevar);
      throw new ContractError(`input '${spec.role}' has dtype ${arg.dtype} but '${other}' has ${otherDtype}; both ` +
                              `are of type ${spec.typevar}`,
                              { reason: "mixed-dtype", argument: spec.role });
    }
    if (!bound.has(spec.typevar)) bound.set(spec.typevar, [spec.role, arg.dtype]);
  }
  return new Map([...bound].map(([tv, [, dt]]) => [tv, WGSL_DTYPE[dt]]));
}

function rankViolation(manifest, call) {
  for (const spec of manifest.inputs) {
    const arg = call.inputs[spec.role];
    if (arg !== null && spec.rank !== null && arg.shape.length !== spec.rank) {
      return [spec.role, `input '${spec.role}' has rank ${arg.shape.length} (shape ${JSON.stringify(arg.shape)}); ` +
                         `the contract declares rank ${spec.rank}`];
    }
  }
  return null;
}

function scopeValues(manifest, call, typevars, outShapes = {}) {
  const shapes = Object.fromEntries([
    ...manifest.inputs.map((spec) => [spec.role, call.inputs[spec.role] ? call.inputs[spec.role].shape : undefined]),
    ...Object.entries(outShapes)]);
  const ranks = Object.fromEntries(Object.entries(shapes).map(([r, s]) => [r, s ? s.length : undefined]));
  const present = Object.fromEntries(Object.entries(shapes).map(([r, s]) => [r, s !== undefined]));
  const dtypes = Object.fromEntries(Object.keys(manifest.typeConstraints).map((tv) => [tv, typevars.get(tv)]));
  return { shapes, ranks, present, dtypes, tunables: call.tunables, attributes: call.attributes,
           device: { limits: call.profile.limits, features: [...call.profile.features].sort() } };
}

function outputShapes(manifest, call, typevars) {
  const scope = new Scope(scopeVariables(scopeValues(manifest, call, typevars), [...call.profile.features]), new Map(),
                          manifest.file);
  const out = [];
  for (const spec of manifest.outputs) {
    const shape = scope.evaluate(spec.shape);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new ExpressionError(`output shape must be a list of non-negative integers, got ${formatValue(shape)}`,
                                { pointer: spec.shape.pointer, file: manifest.file });
    }
    if (spec.rank !== null) {
      const rank = scope.evaluate(spec.rank);
      if (rank !== shape.length) {
        throw new ContractError(`output '${spec.role}': shape ${JSON.stringify(shape)} has rank ${shape.length}, the ` +
                                `contract says rank ${formatValue(rank)}`,
                                { reason: "output-rank", argument: spec.role });
      }
    }
    const dtype = typevars.get(spec.typevar);
    if (dtype === undefined) {
      throw new ContractError(`output '${spec.role}': type ${spec.typevar} is bound by no present input`,
                              { reason: "dtype", argument: spec.role });
    }
    out.push([spec.role, { role: spec.role, shape, dtype: FROM_WGSL[dtype] }]);
  }
  return Object.fromEntries(out);
}

// -- passes --------------------------------------------------------------------------------------
/** An integer slot: `/` is true division, so an integral float (`numel / 4`) is accepted, 4.5 is not. */
function integerSlot(value, what, pointer, manifest, minimum = 0) {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new ExpressionError(`${what} must be an integer >= ${minimum}, got ${formatValue(value)}`,
                              { pointer, file: manifest.file });
  }
  if (value < minimum) {
    throw new ContractError(`${what} is ${value} for this call, below ${minimum} (${manifest.file}:${pointer})`,
                            { reason: "dispatch" });
  }
  return value;
}

function planPass(manifest, _variant, spec, scope, constants, call, values) {
  const limits = call.profile.limits;
  const wg = integerSlot(scope.evaluate(spec.workgroupSize), "workgroupSize", spec.workgroupSize.pointer, manifest, 1);
  const threads = integerSlot(scope.evaluate(spec.threads), "threads", spec.threads.pointer, manifest);
  for (const limit of ["maxComputeWorkgroupSizeX", "maxComputeInvocationsPerWorkgroup"]) {
    if (wg > limits[limit]) {
      throw new ContractError(`pass ${spec.name}: workgroup size ${wg} exceeds device.limits.${limit} = ` +
                              `${limits[limit]}`, { reason: "device-limit" });
    }
  }
  const groups = Math.ceil(threads / wg);
  const workgroups = splitWorkgroups(groups, limits.maxComputeWorkgroupsPerDimension);
  if (workgroups === null) {
    throw new ContractError(`pass ${spec.name}: ${groups} workgroups do not fit in 3 dimensions of at most ` +
                            `device.limits.maxComputeWorkgroupsPerDimension = ` +
                            `${limits.maxComputeWorkgroupsPerDimension}`,
                            { reason: "device-limit" });
  }
  const bindings = spec.bindings.map((b, i) => planBinding(manifest, i, b, spec, scope, constants, call, values));
  checkBindingLimits(spec, bindings, limits);
  const structs = bindings.filter((b) => b.struct).map((b) => structDeclaration(b.struct, b.fieldList));
  return { id: spec.id, name: spec.name, shader: spec.shader, constants, bindings, structs,
           dispatch: { threads, workgroupSize: wg, workgroups } };
}

function planBinding(manifest, index, b, spec, scope, constants, call, values) {
  const resolve = (ref) => (typeof ref === "string" && ref.startsWith("$") ? own(constants, ref.slice(1)) : ref);
  if (b.bufferType === "uniform") {
    const fieldList = b.fields.map((f) => [f.name, f.type, fieldValue(manifest, f, scope)]);
    let bytes;
    try {
      bytes = packStruct(fieldList);
    } catch (err) {
      throw new ExpressionError(err.message, { pointer: b.pointer, file: manifest.file });
    }
    return { index, name: b.name, buffer: b.bufferType, struct: b.structName, fieldList,
             fields: Object.fromEntries(fieldList.map(([n, , v]) => [n, v])), uniformBytes: hex(bytes), data: bytes,
             bytes: bytes.length, byteOffset: 0,
             declaration: bindingDeclaration(index, b.name, b.bufferType, b.structName),
             elementType: null, length: null, arg: null, packing: null };
  }
  const etype = resolve(b.elementType);
  let length = resolve(b.length);
  let scalar, width;
  try {
    [scalar, width] = elementType(String(etype));
  } catch (err) {
    throw new ExpressionError(`binding '${b.name}': ${err.message}`, { pointer: b.pointer, file: manifest.file });
  }
  if (b.packing === "2x16float") {
    if (scalar !== "u32" || width === 3) {
      throw new ExpressionError(`binding '${b.name}': packing 2x16float needs u32, vec2<u32> or vec4<u32>, not ` +
                                `${etype}`,
                                { pointer: b.pointer, file: manifest.file });
    }
    [scalar, width] = ["f16", 2 * width];
  }
  const shape = own(values.shapes, b.arg);
  if (shape === undefined) {
    throw new ContractError(`pass ${spec.name}: binding '${b.name}' needs argument '${b.arg}', which is absent`,
                            { reason: "missing-input", argument: b.arg });
  }
  const spec_ = [...manifest.inputs, ...manifest.outputs].find((s) => s.role === b.arg);
  const wgslDtype = own(values.dtypes, spec_.typevar);
  const numel = shape.reduce((x, y) => x * y, 1);
  if (scalar !== wgslDtype) {
    const packed = b.packing ? " (packing 2x16float holds f16)" : "";
    throw new ExpressionError(`binding '${b.name}': element type ${etype}${packed} does not hold argument '${b.arg}' ` +
                              `of dtype ${wgslDtype}`, { pointer: b.pointer, file: manifest.file });
  }
  const scalarBytes = elementStride(scalar);
  const [first, count] = bindingRange(manifest, b, resolve, numel, width, etype, scalarBytes, call);
  if (length !== null && length !== undefined) {
    length = integerSlot(length, `binding '${b.name}' length`, b.pointer, manifest, 1);
    if (length * width !== count) {
      throw new ContractError(`pass ${spec.name}: binding '${b.name}' declares ${length} x ${etype} but argument ` +
                              `'${b.arg}' has ${count} elements`,
                              { reason: "binding-length", argument: b.arg });
    }
  } else {
    length = null;
  }
  const typeText = length !== null ? `array<${etype}, ${length}>` : `array<${etype}>`;
  return { index, name: b.name, buffer: b.bufferType, arg: b.arg, elementType: String(etype), length,
           packing: b.packing,
           bytes: (count / width) * elementStride(String(etype)), byteOffset: first * scalarBytes, struct: null,
           declaration: bindingDeclaration(index, b.name, b.bufferType, typeText) };
}

function bindingRange(manifest, b, resolve, numel, width, etype, scalarBytes, call) {
  const first = b.first === null ? 0 : integerSlot(resolve(b.first), `binding '${b.name}' first`, b.pointer, manifest);
  const count = b.count === null ? numel - first
                                 : integerSlot(resolve(b.count), `binding '${b.name}' count`, b.pointer, manifest);
  const packed = b.packing ? ` (${width} f16 each, packing 2x16float)` : "";
  if (first + count > numel) {
    throw new ContractError(`binding '${b.name}' covers elements [${first}, ${first + count}) of argument ` +
                            `'${b.arg}', which has ${numel}`,
                            { reason: "binding-range", argument: b.arg });
  }
  if (count % width) {
    const what = first === 0 && count === numel ? `${count} elements` : `the ${count} elements it covers`;
    throw new ExpressionError(`binding '${b.name}': ${what} of '${b.arg}' are not a whole number of ${etype}${packed}`,
                              { pointer: b.pointer, file: manifest.file });
  }
  const limits = call.profile.limits;
  if (!(first === 0 && count === numel) && numel * scalarBytes > limits.maxBufferSize) {
    throw new ContractError(`argument '${b.arg}' needs a buffer of ${numel * scalarBytes} bytes, more than ` +
                            `device.limits.maxBufferSize = ${limits.maxBufferSize}`,
                            { reason: "device-limit", argument: b.arg });
  }
  const alignment = limits.minStorageBufferOffsetAlignment;
  if ((first * scalarBytes) % alignment) {
    throw new ContractError(`binding '${b.name}' starts at byte ${first * scalarBytes} of argument '${b.arg}', not a ` +
                            `multiple of device.limits.minStorageBufferOffsetAlignment = ${alignment}`,
                            { reason: "binding-offset", argument: b.arg });
  }
  return [first, count];
}

function fieldValue(manifest, f, scope) {
  const value = scope.evaluate(f.value);
  if (/(u32|i32)>?$/.test(f.type) && !Array.isArray(value)) {
    return integerSlot(value, `field '${f.name}'`, f.value.pointer, manifest, f.type.includes("u32") ? 0 : -(2 ** 31));
  }
  return value;
}

function checkBindingLimits(spec, bindings, limits) {
  const storage = bindings.filter((b) => b.buffer !== "uniform");
  if (storage.length > limits.maxStorageBuffersPerShaderStage) {
    throw new ContractError(`pass ${spec.name}: ${storage.length} storage buffers exceed ` +
                            `device.limits.maxStorageBuffersPerShaderStage = ${limits.maxStorageBuffersPerShaderStage}`,
                            { reason: "device-limit" });
  }
  for (const b of bindings) {
    const caps = b.buffer === "uniform" ? ["maxUniformBufferBindingSize"]
                                        : ["maxStorageBufferBindingSize", "maxBufferSize"];
    for (const cap of caps) {
      if (b.bytes > limits[cap]) {
        throw new ContractError(`pass ${spec.name}: binding '${b.name}' needs ${b.bytes} bytes, more than ` +
                                `device.limits.${cap} = ${limits[cap]}`,
                                { reason: "device-limit", argument: b.arg });
      }
    }
  }
}

/** A plan as the suite's Plan.as_dict() writes it, with each pass's constants: what the suite compares. */
export function planSummary(plan) {
  return {
    variant: plan.variant,
    passes: plan.passes.map((p) => ({
      id: p.id, name: p.name, shader: p.shader, constants: p.constants,
      dispatch: { ...p.dispatch },
      bindings: p.bindings.map((b) => {
        const out = { index: b.index, name: b.name, buffer: b.buffer };
        if (b.arg !== null) Object.assign(out, { arg: b.arg, elementType: b.elementType, bytes: b.bytes });
        if (b.packing) out.packing = b.packing;
        if (b.byteOffset) out.byteOffset = b.byteOffset;
        if (b.length !== null) out.length = b.length;
        if (b.struct) Object.assign(out, { struct: b.struct, fields: b.fields, uniformBytes: b.uniformBytes });
        return out;
      }),
    })),
    outputs: Object.fromEntries(Object.entries(plan.outputs).map(([r, o]) => [r, { shape: o.shape, dtype: o.dtype }])),
  };
}
