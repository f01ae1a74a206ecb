// Rendering: a shipped template renders on the context its plan gives it, and a template that never ends or
// builds without bound is a PackageError naming the file, the pass and the budget it exceeded (RENDER_WORK_LIMIT,
// MAX_VALUE, MAX_OUTPUT, MAX_TEMPLATE: the suite's sandbox budgets), where Node would otherwise abort on its heap or
// loop for hours. Each test runs in this process: an unbounded render would end the run, not just fail the test.
import assert from "node:assert/strict";
import { test } from "node:test";
import { getKernel } from "@webgpu-kernels/loader";
import { MAX_TEMPLATE } from "@webgpu-kernels/loader/jinja";
import { BASELINE, outcome, publishedSource } from "./helpers.js";

const GELU = "com.microsoft.Gelu";
const TEMPLATE = "elementwise-bias-gelu.wgsl.jinja";
const X8 = { X: { data: new Float32Array(8), shape: [8] } };
const DOUBLED = "{% set s = namespace(t='x') %}{% for i in range(16) %}{% set s.t = s.t ~ s.t %}{% endfor %}";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Gelu, version 1, with `prefix` before its template (republished: the digests match). */
const withPrefix = (prefix) => getKernel(publishedSource(GELU, (files, v) => {
  if (v === 1) files[TEMPLATE] = encoder.encode(prefix + decoder.decode(files[TEMPLATE]));
}), { device: BASELINE, version: 1 });

test("a shipped template renders the WGSL of its plan", async () => {
  const kernel = await getKernel(publishedSource(GELU), { device: BASELINE, version: 1 });
  const [text] = await kernel.render(X8);
  assert.ok(text.length > 1000, text);
  assert.match(text, /@compute @workgroup_size\(256\)/);
  assert.match(text, /@group\(0\) @binding\(0\) var<storage, read> x: array<vec4<f32>>;/);
});

const BOMBS = {
  "range(200000000)": ["{% for i in range(200000000) %}x{% endfor %}",
                       "range() of 200000000 characters or items, more than 1048576 (MAX_VALUE"],
  "two nested range(100000) loops": ["{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                                     "rendering needs more than 4194304 units of work (RENDER_WORK_LIMIT"],
  "a string doubled 40 times": [`${DOUBLED.replace("16", "40")}{{ s.t }}`, "units of work (RENDER_WORK_LIMIT"],
  "17 x 65536 characters of output": [DOUBLED + "{{ s.t }}".repeat(17),
                                      "characters or items, more than 1048576 (MAX_OUTPUT"],
  "one step past V8's longest string": [`${DOUBLED}{{ s.t.replace('', s.t) }}`,
                                        "the JavaScript engine's own limit: Invalid string length"],
};

for (const [label, [prefix, words]] of Object.entries(BOMBS)) {
  test(`a render over the budget is a located error: ${label}`, async () => {
    const kernel = await withPrefix(prefix);
    const got = await outcome(() => kernel.render(X8));
    assert.equal(got.name, "PackageError", got.message);
    assert.equal(got.file, `version 1/${TEMPLATE}`);
    assert.ok(got.message.startsWith(`version 1/${TEMPLATE}: rendering pass Gelu.vec4 (variant vec4): refused by ` +
                                     "the render budget: "), got.message);
    assert.ok(got.message.includes(words), got.message);
  });
}

test("a template over MAX_TEMPLATE is refused before it is parsed", async () => {
  const kernel = await withPrefix(`{# ${"x".repeat(MAX_TEMPLATE)} #}`);
  const got = await outcome(() => kernel.render(X8));
  assert.equal(got.name, "PackageError", got.message);
  assert.ok(got.message.includes(`more than ${MAX_TEMPLATE} (MAX_TEMPLATE`), got.message);
});

test("a template that does not parse names its file", async () => {
  const kernel = await withPrefix("{% for %}");
  const got = await outcome(() => kernel.render(X8));
  assert.equal(got.name, "PackageError", got.message);
  assert.equal(got.file, `version 1/${TEMPLATE}`);
  assert.ok(got.message.includes("the template does not parse"), got.message);
});
