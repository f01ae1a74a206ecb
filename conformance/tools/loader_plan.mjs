// Plans calls with a JavaScript loader's planner, no WebGPU: the Node side of conformance/tools/loader_plans.py.
// Usage: node loader_plan.mjs <file URL of the loader's "./plan" entry module (exports readManifest, planCall,
//        planSummary)> [<file URL of @huggingface/jinja's entry module>]
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
//   {"manifest": {...}, "file": "manifest.json", "calls": [{"inputs", "attributes", "tunables", "profile"}, ...]}
//     -> {"results": [{"plan": summary} | {"error": {"name", "reason", "argument", "message", "failures"}}, ...]}
import { createInterface } from "node:readline";
import { register } from "node:module";

// An installed suite's loader (conformance/loader/) has no node_modules/ above it, and Node has no import map: a
// resolve hook gives the loader's bare `@huggingface/jinja` the entry module the suite located.
if (process.argv[3]) {
  const hook = `export async function resolve(specifier, context, next) {
    return specifier === "@huggingface/jinja" ? { url: ${JSON.stringify(process.argv[3])}, shortCircuit: true }
                                              : next(specifier, context);
  }`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
}

const { readManifest, planCall, planSummary } = await import(process.argv[2]);

function plan(manifest, call) {
  try {
    return { plan: planSummary(planCall(manifest, call.inputs, call)) };
  } catch (err) {
    return { error: { name: err.name, reason: err.reason ?? null, argument: err.argument ?? null,
                      message: String(err.message), failures: err.failures ?? null, pointer: err.pointer ?? null } };
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let answer;
  try {
    const req = JSON.parse(line);
    const manifest = readManifest(req.manifest, req.file);
    answer = { results: req.calls.map((c) => plan(manifest, c)) };
  } catch (err) {   // the loader's own errors name the file and pointer; anything else needs its stack
    answer = { error: err.name === "ExpressionError" ? `${err.name}: ${err.message}` : String(err.stack || err) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
