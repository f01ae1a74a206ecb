// Names from the manifest and from the caller are own-property lookups: a type variable, role or attribute named
// like an Object.prototype member (constructor, toString, __proto__) plans as any other name, and a caller's
// tunable, attribute or dtype of such a name is refused as the suite refuses it, not read off Object.prototype.
import assert from "node:assert/strict";
import { test } from "node:test";
import { getKernel } from "@webgpu-kernels/loader";
import { planCall, planSummary, readManifest } from "@webgpu-kernels/loader/plan";
import { BASELINE, goldenCases, outcome, profileOf, publishedSource, readManifestJson } from "./helpers.js";

const GELU = "com.microsoft.Gelu";
const X8 = { X: { shape: [8], dtype: "float32" } };
const PROFILE = { limits: BASELINE.limits, features: [...BASELINE.features] };

/** Gelu's manifest JSON with each text replaced (in its compact form), then `edit`ed. */
function renamedRaw(replacements, edit = (raw) => raw) {
  let text = JSON.stringify(readManifestJson(GELU));
  for (const [old, now] of Object.entries(replacements)) {
    assert.ok(text.includes(old), old);
    text = text.replaceAll(old, now);
  }
  return edit(JSON.parse(text));
}

const renamed = (replacements, edit) => readManifest(renamedRaw(replacements, edit), `${GELU}/manifest.json`);
/** What a refusal is compared by: the messages name the type variable. */
const refusal = (got) => (got.ok ? got : { name: got.name, reason: got.reason, argument: got.argument });

const plan = (manifest, inputs, options = {}) => outcome(() => planSummary(planCall(manifest, inputs,
                                                                                    { profile: PROFILE, ...options })));

test("a type variable and an attribute named constructor plan every golden call as T does", async () => {
  const original = readManifest(readManifestJson(GELU), `${GELU}/manifest.json`);
  const asConstructor = renamed({ '"dtype":"T"': '"dtype":"constructor"', '"T":[': '"constructor":[',
                                "dtypes.T": "dtypes.constructor" },
                              (raw) => ({ ...raw, attributes: { constructor: { type: "int", default: 1 } } }));
  let planned = 0;
  for (const c of goldenCases(GELU)) {
    const options = { profile: profileOf(c.profile), tunables: c.tunables };
    const [a, b] = [await outcome(() => planSummary(planCall(original, c.inputs, options))),
                    await outcome(() => planSummary(planCall(asConstructor, c.inputs, options)))];
    assert.deepEqual(refusal(b), refusal(a), c.id);
    planned += a.ok ? 1 : 0;
  }
  assert.ok(planned > 100, `${planned} planned`);
});

for (const name of ["constructor", "toString", "__proto__"]) {
  test(`a tunable named ${name} is refused`, async () => {
    const got = await plan(readManifest(readManifestJson(GELU)), X8, { tunables: JSON.parse(`{"${name}": 64}`) });
    assert.deepEqual([got.name, got.reason, got.argument], ["ContractError", "tunable", name]);
    assert.ok(got.message.includes(`${GELU} has no tunable '${name}'; tunables are WORKGROUP_SIZE`), got.message);
  });
  test(`an attribute named ${name} is refused`, async () => {
    const got = await plan(readManifest(readManifestJson(GELU)), X8, { attributes: JSON.parse(`{"${name}": 1}`) });
    assert.deepEqual([got.name, got.reason, got.argument], ["ContractError", "unknown-argument", name]);
    assert.ok(got.message.includes(`${GELU} has no attribute '${name}'`), got.message);
  });
}

test("a dtype named constructor is an unknown dtype", async () => {
  const got = await plan(readManifest(readManifestJson(GELU)), { X: { shape: [8], dtype: "constructor" } });
  assert.deepEqual([got.name, got.reason, got.argument], ["ContractError", "dtype", "X"]);
  assert.ok(got.message.includes('argument \'X\': unknown dtype "constructor"'), got.message);
});

test("a tunable the manifest has is taken", async () => {
  const got = await plan(readManifest(readManifestJson(GELU)), X8, { tunables: { WORKGROUP_SIZE: 64 } });
  assert.equal(got.value.variant, "vec4");
  assert.equal(got.value.passes[0].dispatch.workgroupSize, 64);
});

test("a role named toString: absent is missing, present plans and renders", async () => {
  const replacements = { '"role":"X"': '"role":"toString"', '"arg":"X"': '"arg":"toString"',
                         "shapes.X": "shapes.toString", "ranks.X": "ranks.toString", '"X":{': '"toString":{' };
  const manifest = renamed(replacements);
  const absent = await plan(manifest, {});
  assert.deepEqual([absent.reason, absent.argument], ["missing-input", "toString"]);
  assert.equal((await plan(manifest, { toString: X8.X })).value.variant, "vec4");
  const kernel = await getKernel(publishedSource(GELU, (files, v) => {
    if (v === 1) files["manifest.json"] = new TextEncoder().encode(JSON.stringify(renamedRaw(replacements)));
  }), { device: BASELINE, version: 1 });
  const [wgsl] = await kernel.render({ toString: { data: new Float32Array(8), shape: [8] } });
  assert.ok(wgsl.length > 1000);
});
