// A pass's template rendered with @huggingface/jinja, on the context specs/README.md "Template context" gives it
// (the suite's conformance/gpu/render.py builds the same one for Jinja2), within the budget of one render
// (budget.js).
import { Template } from "@huggingface/jinja";
import { BudgetError, MAX_TEMPLATE, renderBudgeted } from "./budget.js";
import { PackageError } from "./errors.js";
import { own } from "./own.js";

const encoder = new TextEncoder();

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
 * `where`: name -> where the file came from (a URL, `version N/<name>`), what an error names. */
export class Renderer {
  constructor(templates, where = {}) {
    this.sources = templates;
    this.where = where;
    this.parsed = new Map();
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
    try {
      return renderBudgeted(parsed, templateContext(plan, pass));
    } catch (err) {
      const refused = err instanceof BudgetError ? "refused by the render budget: " : "";
      throw new PackageError(`rendering pass ${pass.name} (variant ${plan.variant}): ${refused}${err.message}`,
                             { file });
    }
  }
}
