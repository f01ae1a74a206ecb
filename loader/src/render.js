// A pass's template rendered with @huggingface/jinja, on the context specs/README.md "Template context" gives it
// (the suite's conformance/gpu/render.py builds the same one for Jinja2).
import { Template } from "@huggingface/jinja";
import { PackageError } from "./errors.js";

/** What the template of `pass` sees. */
export function templateContext(plan, pass) {
  const bindings = pass.bindings.map((b) => ({ index: b.index, name: b.name, buffer: b.buffer, elementType: b.elementType,
    length: b.length, arg: b.arg, struct: b.struct, declaration: b.declaration, packing: b.packing }));
  return {
    ...pass.constants, constants: { ...pass.constants }, bindings,
    binding: Object.fromEntries(bindings.map((b) => [b.name, b])),
    structs: pass.structs, declarations: [...pass.structs, ...bindings.map((b) => b.declaration)].join("\n"),
    workgroupSize: pass.dispatch.workgroupSize, passName: pass.name, passId: pass.id, variant: plan.variant, op: plan.op,
  };
}

/** Templates parsed once per package; `render(plan, pass)` is the WGSL text. */
export class Renderer {
  constructor(templates) {
    this.sources = templates;   // name -> source text
    this.parsed = new Map();
  }

  render(plan, pass) {
    if (!this.parsed.has(pass.shader)) {
      const source = this.sources[pass.shader];
      if (source === undefined) throw new PackageError("the manifest names this template, the package has no such file", { file: pass.shader });
      try {
        this.parsed.set(pass.shader, new Template(source));
      } catch (err) {
        throw new PackageError(`the template does not parse: ${err.message}`, { file: pass.shader });
      }
    }
    try {
      return this.parsed.get(pass.shader).render(templateContext(plan, pass));
    } catch (err) {
      throw new PackageError(`rendering pass ${pass.name}: ${err.message}`, { file: pass.shader });
    }
  }
}
