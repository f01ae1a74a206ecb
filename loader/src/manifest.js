// A manifest read for planning: every expression parsed once, variants by priority (highest first), binding
// sets resolved. The manifest was validated by the suite's lint; what is checked here is what planning needs.
import { compile } from "./expressions.js";
import { ExpressionError } from "./errors.js";
import { own } from "./own.js";

const ptr = (...parts) => `/${parts.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1")).join("/")}`;

export function readManifest(raw, file = "manifest.json") {
  if (!raw || typeof raw !== "object" || !Array.isArray(raw.variants) || !Array.isArray(raw.inputs)) {
    throw new ExpressionError("not a kernel manifest (no inputs or variants)", { file });
  }
  const rules = new Map();
  for (const [name, src] of Object.entries(raw.derive || {})) rules.set(name, compile(src, ptr("derive", name), file));
  const topConstants = Object.keys(raw.constants || {});
  for (const name of topConstants) rules.set(name, compile(raw.constants[name], ptr("constants", name), file));
  const bindingSets = raw.bindingSets || {};
  const variants = raw.variants.map((v, i) => {
    const vp = ["variants", i];
    const local = v.constants || {};
    const vrules = new Map(rules);
    for (const [name, src] of Object.entries(local)) {
      vrules.set(name, compile(src, ptr(...vp, "constants", name), file));
    }
    const constantNames = [...new Set([...topConstants, ...Object.keys(local)])];
    const passes = v.passes.map((p, j) => {
      const pp = [...vp, "passes", j];
      const list = typeof p.bindings === "string" ? own(bindingSets, p.bindings) : p.bindings;
      if (!Array.isArray(list)) {
        throw new ExpressionError(`bindingSets has no entry ${JSON.stringify(p.bindings)}`,
                                  { pointer: ptr(...pp, "bindings"), file });
      }
      const where = typeof p.bindings === "string" ? ["bindingSets", p.bindings] : [...pp, "bindings"];
      const bindings = list.map((b, k) => ({
        name: b.name, bufferType: b.buffer.type, arg: b.arg ?? null, elementType: b.elementType ?? null,
        packing: b.packing ?? null, length: b.length ?? null, first: b.first ?? null, count: b.count ?? null,
        structName: b.struct ? b.struct.name : null, pointer: ptr(...where, k),
        fields: b.struct ? b.struct.fields.map((f, n) => ({ name: f.name, type: f.type,
          value: compile(f.value, ptr(...where, k, "struct", "fields", n, "value"), file) })) : [],
      }));
      return { id: p.id, name: p.name, shader: p.shader, bindings,
               threads: compile(p.dispatch.threads, ptr(...pp, "dispatch", "threads"), file),
               workgroupSize: compile(p.dispatch.workgroupSize, ptr(...pp, "dispatch", "workgroupSize"), file) };
    });
    return { id: v.id, priority: v.priority, pointer: ptr(...vp), rules: vrules, constantNames, passes,
             when: v.when.map((w, j) => compile(w, ptr(...vp, "when", j), file)) };
  });
  variants.sort((a, b) => b.priority - a.priority);
  const outputs = raw.outputs.map((o, i) => ({
    role: o.role, typevar: o.dtype, shape: compile(o.shape, ptr("outputs", i, "shape"), file),
    rank: o.rank === undefined ? null : compile(o.rank, ptr("outputs", i, "rank"), file),
  }));
  const inputs = raw.inputs.map((s) => ({ role: s.role, typevar: s.dtype, rank: s.rank ?? null,
                                          optional: !!s.optional }));
  return {
    raw, file, opId: `${raw.domain}.${raw.name}`, version: raw.version ?? 1, inputs, outputs, variants,
    typeConstraints: raw.typeConstraints, attributes: raw.attributes || {}, tunables: raw.tunables || {},
    shaders: [...new Set(variants.flatMap((v) => v.passes.map((p) => p.shader)))].sort(),
  };
}
