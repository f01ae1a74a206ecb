// The JavaScript side of `conformance lint`'s portable-subset check: manifest expressions evaluated and
// templates rendered with @huggingface/jinja, the engine a browser loader uses (conformance/tools/jsjinja.py
// starts one process per lint run). Usage: node jinja_js.mjs <file URL of @huggingface/jinja's entry module>.
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
//   {"op": "eval", "bytes": {"f16": 2, ...}, "scopes": [scope, ...], "exprs": [source, ...], "jobs": [[s, e], ...]}
//     -> {"results": [{"kind": "number"|"bool"|"string"|"list"|"none"|"undefined"|"object", "value": ...}
//                     | {"error": message}, ...]}
//   {"op": "render", "templates": {name: source}, "jobs": [[name, context], ...]}
//     -> {"results": [{"text": wgsl} | {"error": message}, ...]}
import { createInterface } from "node:readline";

const { Template, Environment, Interpreter, tokenize, parse } = await import(process.argv[2]);
const OPTIONS = { lstrip_blocks: true, trim_blocks: true };   // what Template uses
// The manifest functions are the reference loader's (loader/src/functions.js; the wheel carries it as
// conformance/loader/), so the check and the loader evaluate the same definitions.
const { LITERALS, functions } = await import(new URL("../../loader/src/functions.js", import.meta.url))
  .catch(() => import(new URL("../loader/src/functions.js", import.meta.url)));

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
  for (const [name, value] of Object.entries({ ...LITERALS, ...scope, ...functions(features, bytes) })) {
    env.set(name, value);
  }
  return env;
}

function attempt(fn) {
  try {
    return fn();
  } catch (err) {
    return { error: String((err && err.message) || err) };
  }
}

function evaluate(req) {
  const parsed = req.exprs.map((source) => attempt(() => ({ node: expression(source) })));
  const envs = new Map();
  return req.jobs.map(([s, e]) => {
    if (parsed[e].error) return parsed[e];
    if (!envs.has(s)) envs.set(s, environment(req.scopes[s], req.bytes));
    const env = envs.get(s);
    return attempt(() => plain(new Interpreter(env).evaluate(parsed[e].node, env)));
  });
}

function render(req) {
  const templates = new Map();
  return req.jobs.map(([name, context]) => {
    if (!templates.has(name)) templates.set(name, attempt(() => ({ template: new Template(req.templates[name]) })));
    const t = templates.get(name);
    return t.error ? t : attempt(() => ({ text: t.template.render(context) }));
  });
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const req = JSON.parse(line);
  const results = attempt(() => (req.op === "eval" ? evaluate(req) : render(req)));
  process.stdout.write(JSON.stringify(results.error ? results : { results }) + "\n");
}
