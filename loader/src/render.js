// A pass's template rendered with @huggingface/jinja, on the context specs/README.md "Template context" gives it
// (the suite's conformance/gpu/render.py builds the same one for Jinja2), within the budget of one render
// (budget.js).
import { Template } from "@huggingface/jinja";
import { BudgetError, MAX_TEMPLATE, renderBudgeted } from "./budget.js";
import { PackageError } from "./errors.js";
import { own } from "./own.js";
import { Lru } from "./signature.js";

const encoder = new TextEncoder();

/** Rendered texts a kernel keeps by default (keyed by the template and all it sees: see contextKey). */
export const RENDERS = 256;

/** All a template sees, as text, exactly: each value written with its type (-0, NaN, undefined and "0" differ), so
 * two contexts with the same key render the same text; null when a value is not plain data (nothing is kept). */
export function contextKey(value) {
  switch (typeof value) {
    case "number": return Object.is(value, -0) ? "-0" : String(value);
    case "string": return JSON.stringify(value);
    case "boolean": return value ? "true" : "false";
    case "undefined": return "undefined";
    case "object": {
      if (value === null) return "null";
      const parts = [];
      if (Array.isArray(value)) {
        for (const item of value) {
          const k = contextKey(item);
          if (k === null) return null;
          parts.push(k);
        }
        return `[${parts.join(",")}]`;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return null;
      for (const name of Object.keys(value)) {
        const k = contextKey(value[name]);
        if (k === null) return null;
        parts.push(`${JSON.stringify(name)}:${k}`);
      }
      return `{${parts.join(",")}}`;
    }
    default: return null;
  }
}

/** What the template of `pass` sees. */
export function templateContext(plan, pass) {
  const bindings = pass.bindings.map((b) => ({ index: b.index, name: b.name, buffer: b.buffer,
    elementType: b.elementType, length: b.length, arg: b.arg, struct: b.struct, declaration: b.declaration,
    packing: b.packing }));
  return {
    ...pass.constants, constants: { ...pass.constants }, bindings,
    binding: Object.fromEntries(bindings.map((b) => [b.name, b])),
    structs: pass.structs, declarations: [...pass.structs, ...bindings.map((b) => b.declaration)].join("\n"),
    workgroupSize: pass.dispatch.workgroupSize, passName: pass.name, passId: pass.id, variant: plan.variant,
    op: plan.op,
  };
}

/** Templates parsed once per package; `render(plan, pass)` is the WGSL text. `templates`: name -> source text;
 * `where`: name -> where the file came from (a URL, `version N/<name>`), what an error names. `keep`: rendered texts
 * kept, keyed by the template and its whole context (contextKey): a new signature whose pass sees what an earlier
 * one's saw (another sequence length, another batch) renders nothing; 0 keeps none. */
export class Renderer {
  constructor(templates, where = {}, keep = 0) {
    this.sources = templates;
    this.where = where;
    this.parsed = new Map();
    this.texts = keep > 0 ? new Lru(keep) : null;
    this.rendered = 0;   // renders made
    this.reused = 0;     // renders answered from `texts`
  }

  template(name) {
    const file = own(this.where, name) ?? name;
    if (!this.parsed.has(name)) {
      const source = own(this.sources, name);
      if (source === undefined) {
        throw new PackageError("the manifest names this template, the package has no such file", { file });
      }
      const bytes = encoder.encode(source).length;
      if (bytes > MAX_TEMPLATE) {
        throw new PackageError(`the template is ${bytes} bytes, more than ${MAX_TEMPLATE} (MAX_TEMPLATE, as in ` +
                               "the suite's sandbox)", { file });
      }
      try {
        this.parsed.set(name, new Template(source).parsed);
      } catch (err) {
        throw new PackageError(`the template does not parse: ${err.message}`, { file });
      }
    }
    return { parsed: this.parsed.get(name), file };
  }

  render(plan, pass) {
    const { parsed, file } = this.template(pass.shader);
    const context = templateContext(plan, pass);
    const key = this.texts === null ? null : contextKey(context);
    if (key !== null) {
      const text = this.texts.get(`${JSON.stringify(pass.shader)}\n${key}`);
      if (text !== undefined) {
        this.reused++;
        return text;
      }
    }
    try {
      const text = renderBudgeted(parsed, context);
      this.rendered++;
      if (key !== null) this.texts.set(`${JSON.stringify(pass.shader)}\n${key}`, text);
      return text;
    } catch (err) {
      const refused = err instanceof BudgetError ? "refused by the render budget: " : "";
      throw new PackageError(`rendering pass ${pass.name} (variant ${plan.variant}): ${refused}${err.message}`,
                             { file });
    }
  }
}
