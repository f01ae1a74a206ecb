// The JavaScript side of `conformance lint`'s portable-subset check: manifest expressions evaluated and
// templates rendered with @huggingface/jinja, the engine a browser loader uses (conformance/tools/jsjinja.py
// starts one process per lint run). Usage: node jinja_js.mjs <file URL of @huggingface/jinja's entry module>
// <file URL of the reference loader's "./jinja" entry module>.
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
//   {"op": "eval", "bytes": {"f16": 2, ...}, "scopes": [scope, ...], "exprs": [source, ...], "jobs": [[s, e], ...]}
//     -> {"results": [{"kind": "number"|"bool"|"string"|"list"|"none"|"undefined"|"object", "value": ...}
//                     | {"error": message}, ...]}
//   {"op": "render", "templates": {name: source}, "jobs": [[name, context], ...]}
//     -> {"results": [{"text": wgsl} | {"error": message}, ...]}
//   Either may carry "budget": {"work": units, "value": length, "output": length}, the Python sandbox's budgets
//   (conformance/gpu/render.py; the loader's own by default): each job may spend that much work as the loader
//   counts it (a unit per node, 64 per block run, one per character or item of every value built), build no string
//   or list longer than "value" and render no more than "output" characters; an overrun is {"error": message,
//   "budget": true}. range() is bounded before it builds anything.
import { realpathSync } from "node:fs";
import { register } from "node:module";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const LOADER_JINJA = process.argv[3];
// The loader's bare `@huggingface/jinja` is the module this process imports (Node has no import map; an installed
// suite's loader has no node_modules/ above it): one copy of the engine, whose classes the loader's interpreter
// extends. Its URL as Node keys the module (the real path; `%40huggingface` would be a second copy).
const JINJA = pathToFileURL(realpathSync(fileURLToPath(process.argv[2]))).href;
const hook = `export async function resolve(specifier, context, next) {
  return specifier === "@huggingface/jinja" ? { url: ${JSON.stringify(JINJA)}, shortCircuit: true }
                                            : next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);

const { Template, Environment, tokenize, parse } = await import(JINJA);
const OPTIONS = { lstrip_blocks: true, trim_blocks: true };   // what Template uses
// The manifest functions and the render budget are the reference loader's ("./jinja" entry), so the check and the
// loader evaluate the same definitions and count a job's work with the same code (Budget: a unit per node, 64 per
// block run, one per character or item built, range() sized before it builds; BudgetedInterpreter).
const { LITERALS, functions, Budget, BudgetError, BudgetedInterpreter, renderBudgeted } = await import(LOADER_JINJA);

/** An overrun in lint's words (the loader's BudgetError says the same in the loader's). */
function overrun(err) {
  switch (err.limit) {
    case "RENDER_WORK_LIMIT":
      return `spent more than ${err.most} units of work (RENDER_WORK_LIMIT, the budget of one render in the Python ` +
             "sandbox): a loop or a range too large";
    case "MAX_VALUE":
      return `${err.what} of ${err.length} characters or items, more than ${err.most} (MAX_VALUE, as in the Python ` +
             "sandbox)";
    case "MAX_OUTPUT":
      return `rendered ${err.length} characters, more than ${err.most} (MAX_OUTPUT)`;
    default:   // the JavaScript engine's own limit
      return String((err.cause?.message) || err.message);
  }
}

function plain(v) {
  switch (v.type) {
    case "IntegerValue":
    case "FloatValue":
      return { kind: "number", value: v.value };
    case "BooleanValue":
      return { kind: "bool", value: v.value };
    case "StringValue":
      return { kind: "string", value: v.value };
    case "ArrayValue":
    case "TupleValue":
      return { kind: "list", value: v.value.map((x) => plain(x).value) };
    case "NullValue":
      return { kind: "none", value: null };
    case "UndefinedValue":
      return { kind: "undefined", value: null };
    default:
      return { kind: "object", value: null };
  }
}

function expression(source) {
  const program = parse(tokenize(`{{ ${source} }}`, OPTIONS));
  if (program.body.length !== 1) throw new Error("not one expression");
  return program.body[0];
}

function environment(scope, bytes, budget) {
  const env = new Environment();
  const features = (scope.device?.features) || [];
  const names = { ...LITERALS, range: budget.range, ...scope, ...functions(features, bytes) };
  for (const [name, value] of Object.entries(names)) {
    env.set(name, value);
  }
  return env;
}

function attempt(fn) {
  try {
    return fn();
  } catch (err) {
    if (err instanceof BudgetError) return { error: overrun(err), budget: true };
    const error = String((err?.message) || err);
    return err instanceof RangeError ? { error, budget: true } : { error };
  }
}

/** `fn(budget)` as one job: the request's budgets ({work, value, output}), nothing spent yet. */
function job(budget, fn) {
  budget.spent = 0;
  return fn(budget);
}

function evaluate(req) {
  const parsed = req.exprs.map((source) => attempt(() => ({ node: expression(source) })));
  const budget = new Budget(req.budget || {});
  const envs = new Map();
  return req.jobs.map(([s, e]) => {
    if (parsed[e].error) return parsed[e];
    if (!envs.has(s)) envs.set(s, environment(req.scopes[s], req.bytes, budget));
    const env = envs.get(s);
    return attempt(() => job(budget, (b) => plain(new BudgetedInterpreter(env, b).evaluate(parsed[e].node, env))));
  });
}

// The loader's render (Template.render's globals less its range(), which builds any list it is asked for, e.g.
// range(300000000): the budget's bounded one), the rendered text counted against MAX_OUTPUT.
function render(req) {
  const templates = new Map();
  const budget = new Budget(req.budget || {});
  return req.jobs.map(([name, context]) => {
    if (!templates.has(name)) templates.set(name, attempt(() => ({ template: new Template(req.templates[name]) })));
    const t = templates.get(name);
    if (t.error || t.overrun) return t.error ? t : t.overrun;   // one overrun per template, not one per context
    const result = attempt(() => job(budget, (b) => ({ text: renderBudgeted(t.template.parsed, context, b) })));
    if (result.budget) t.overrun = result;
    return result;
  });
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const req = JSON.parse(line);
  const results = attempt(() => (req.op === "eval" ? evaluate(req) : render(req)));
  process.stdout.write(`${JSON.stringify(results.error ? results : { results })}\n`);
}
