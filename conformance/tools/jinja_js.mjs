// The JavaScript side of `conformance lint`'s portable-subset check: manifest expressions evaluated and
// templates rendered with @huggingface/jinja, the engine a browser loader uses (conformance/tools/jsjinja.py
// starts one process per lint run). Usage: node jinja_js.mjs <file URL of @huggingface/jinja's entry module>.
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
//   {"op": "eval", "bytes": {"f16": 2, ...}, "scopes": [scope, ...], "exprs": [source, ...], "jobs": [[s, e], ...]}
//     -> {"results": [{"kind": "number"|"bool"|"string"|"list"|"none"|"undefined"|"object", "value": ...}
//                     | {"error": message}, ...]}
//   {"op": "render", "templates": {name: source}, "jobs": [[name, context], ...]}
//     -> {"results": [{"text": wgsl} | {"error": message}, ...]}
//   Either may carry "budget": {"work": units, "value": length, "output": length}, the Python sandbox's budgets
//   (conformance/gpu/render.py): each job may evaluate that many nodes (plus one unit per character or item of
//   every value they give), build no string or list longer than "value" and render no more than "output"
//   characters; an overrun is {"error": message, "budget": true}. range() is bounded before it builds anything.
import { createInterface } from "node:readline";

const { Template, Environment, Interpreter, tokenize, parse } = await import(process.argv[2]);
const OPTIONS = { lstrip_blocks: true, trim_blocks: true };   // what Template uses
// The manifest functions are the reference loader's (loader/src/functions.js; the wheel carries it as
// conformance/loader/), so the check and the loader evaluate the same definitions.
const { LITERALS, functions } = await import(new URL("../../loader/src/functions.js", import.meta.url))
  .catch(() => import(new URL("../loader/src/functions.js", import.meta.url)));

// -- the work budget of one job ------------------------------------------------------------------------------------
const BUDGET = { work: 1 << 22, value: 1 << 20, output: 1 << 20, spent: 0 };

class BudgetError extends Error {}

function charge(units) {
  BUDGET.spent += units;
  if (BUDGET.spent > BUDGET.work) {
    throw new BudgetError(`spent more than ${BUDGET.work} units of work (RENDER_WORK_LIMIT, the budget of one ` +
                          "render in the Python sandbox): a loop or a range too large");
  }
}

function sized(value, what) {
  if (value > BUDGET.value) {
    throw new BudgetError(`${what} of ${value} characters or items, more than ${BUDGET.value} (MAX_VALUE, as in the ` +
                          "Python sandbox)");
  }
  return value;
}

const evaluateNode = Interpreter.prototype.evaluate;
Interpreter.prototype.evaluate = function (node, env) {   // every node of every template and expression is counted
  charge(1);
  const result = evaluateNode.call(this, node, env);
  const v = result && result.value;
  if (typeof v === "string" || Array.isArray(v)) charge(sized(v.length, "a value"));
  return result;
};

// A block run (each loop iteration, each branch taken) costs @huggingface/jinja a fresh scope: about 64 node
// evaluations' worth (docs/manual/threat-model.md gives the measurement), so it is charged that, and an empty loop of
// millions of iterations ends within the budget like any other.
const BLOCK_UNITS = 64;
const evaluateBlock = Interpreter.prototype.evaluateBlock;
Interpreter.prototype.evaluateBlock = function (statements, env) {
  charge(BLOCK_UNITS);
  return evaluateBlock.call(this, statements, env);
};

function range(start, stop, step = 1) {
  if (stop === undefined) [start, stop] = [0, start];
  if (![start, stop, step].every(Number.isInteger) || step === 0) throw new Error("range() takes integers, step not 0");
  const count = Math.max(0, Math.ceil((stop - start) / step));
  charge(sized(count, "range()"));
  return Array.from({ length: count }, (_, i) => start + i * step);
}

function budgeted(budget, fn) {
  Object.assign(BUDGET, budget || {}, { spent: 0 });
  return fn();
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

function environment(scope, bytes) {
  const env = new Environment();
  const features = (scope.device && scope.device.features) || [];
  for (const [name, value] of Object.entries({ ...LITERALS, range, ...scope, ...functions(features, bytes) })) {
    env.set(name, value);
  }
  return env;
}

function attempt(fn) {
  try {
    return fn();
  } catch (err) {
    const error = String((err && err.message) || err);
    return err instanceof BudgetError || err instanceof RangeError ? { error, budget: true } : { error };
  }
}

function evaluate(req) {
  const parsed = req.exprs.map((source) => attempt(() => ({ node: expression(source) })));
  const envs = new Map();
  return req.jobs.map(([s, e]) => {
    if (parsed[e].error) return parsed[e];
    if (!envs.has(s)) envs.set(s, environment(req.scopes[s], req.bytes));
    const env = envs.get(s);
    return attempt(() => budgeted(req.budget, () => plain(new Interpreter(env).evaluate(parsed[e].node, env))));
  });
}

// Template.render less its global range(), which builds any list it is asked for (range(300000000)): the same
// globals, with the bounded range() above.
function renderBounded(template, context) {
  const env = new Environment();
  const globals = { ...LITERALS, range, raise_exception: (message) => { throw new Error(message); } };
  for (const [name, value] of Object.entries({ ...globals, ...context })) env.set(name, value);
  return new Interpreter(env).run(template.parsed).value;
}

function render(req) {
  const templates = new Map();
  return req.jobs.map(([name, context]) => {
    if (!templates.has(name)) templates.set(name, attempt(() => ({ template: new Template(req.templates[name]) })));
    const t = templates.get(name);
    if (t.error || t.overrun) return t.error ? t : t.overrun;   // one overrun per template, not one per context
    const result = attempt(() => budgeted(req.budget, () => {
      const text = renderBounded(t.template, context);
      if (text.length > BUDGET.output) {
        throw new BudgetError(`rendered ${text.length} characters, more than ${BUDGET.output} (MAX_OUTPUT)`);
      }
      return { text };
    }));
    if (result.budget) t.overrun = result;
    return result;
  });
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const req = JSON.parse(line);
  const results = attempt(() => (req.op === "eval" ? evaluate(req) : render(req)));
  process.stdout.write(JSON.stringify(results.error ? results : { results }) + "\n");
}
