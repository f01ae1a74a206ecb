// The Node planning check: every golden call of every shipped package (../cases/<package>.yaml) planned by the
// "./plan" entry, no WebGPU, against what the golden file records: the variant, each pass's dispatch (name,
// threads, workgroup size, workgroups) and the outputs of an accepted call; the reason, the argument and, for
// "no-variant", each variant's first false predicate with its values, word for word, of a refused one. (The suite
// also compares every other field of the plan, constants, bindings, uniform bytes, with its own planner:
// tests/loader/test_plans.py.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { planCall, planSummary, readManifest } from "@webgpu-kernels/loader/plan";
import { goldenCases, packageNames, profileOf, readManifestJson } from "./helpers.js";

/** The differences between the loader's answer to `c` and the golden file's, as "field: golden ..., loader ...". */
function differences(manifest, c) {
  const inputs = Object.fromEntries(Object.entries(c.inputs).map(([role, t]) => [role, t && { shape: t.shape,
                                                                                             dtype: t.dtype }]));
  const options = { profile: profileOf(c.profile), attributes: c.attributes || {}, tunables: c.tunables || {} };
  const want = c.expect;
  const out = [];
  const same = (field, golden, loader) => {
    try {
      assert.deepStrictEqual(loader, golden);
    } catch {
      out.push(`${field}: golden ${JSON.stringify(golden)}, loader ${JSON.stringify(loader)}`);
    }
  };
  let plan;
  try {
    plan = planSummary(planCall(manifest, inputs, options));
  } catch (err) {
    if (want.outcome !== "rejected") return [`outcome: golden ${want.outcome}, loader ${err.name}: ${err.message}`];
    same("error", "ContractError", err.name);
    same("reason", want.reason, err.reason);
    if (want.detail !== null && typeof want.detail === "object") same("failures", want.detail, err.failures);
    else same("argument", want.detail ?? null, err.argument);
    if (want.argument !== undefined) same("argument", want.argument, err.argument);
    return out;
  }
  if (want.outcome !== "accepted") return [`outcome: golden ${want.outcome} (${want.reason}), loader accepted`];
  same("variant", want.variant, plan.variant);
  same("passes", want.passes, plan.passes.map((p) => ({ name: p.name, ...p.dispatch })));
  same("outputs", want.outputs, plan.outputs);
  return out;
}

for (const name of packageNames()) {
  test(`every golden call of ${name} plans as its golden file says`, (t) => {
    const manifest = readManifest(readManifestJson(name), `${name}/manifest.json`);
    const cases = goldenCases(name);
    assert.ok(cases.length > 100, `${name}: ${cases.length} golden cases`);
    const found = cases.flatMap((c) => differences(manifest, c).map((d) => `${c.id}: ${d}`));
    t.diagnostic(`${cases.length} calls`);
    if (found.length) assert.fail(`${found.length} differences, the first:\n  ${found.slice(0, 5).join("\n  ")}`);
  });
}
