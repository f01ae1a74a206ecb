// The signature cache (src/signature.js, src/index.js) never changes an answer, and does what it is for: a repeated
// signature is neither planned nor rendered again, and the cache is bounded. No GPU: plans and WGSL are what a
// signature determines before WebGPU; the GPU side (pipelines, buffers, bind groups) is test/webgpu.test.js's.
//
// On and off agree: a cached kernel answers every golden call of every shipped package twice; an answer planned
// afresh (a miss) is what `cache: false` answers (the same planCall on the same reading of the call), and every answer
// from the cache (a hit) is compared with that, or, for a call whose signature an earlier golden call had, with a
// kernel without a cache. (A refusal is not cached: a refused call is planned every time.) A signature field left
// out of the key (planted below, one field at a time) makes calls
// that differ only in it hit each other's entry, and the same comparison fails naming the calls.
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { after, describe, test } from "node:test";
import { getKernel } from "@webgpu-kernels/loader";
import { Lru, signatureKey, snapshotOptions } from "../src/signature.js";
import { BASELINE, LOADER, REPOSITORY, goldenCases, packageNames, profileOf, publishedSource } from "./helpers.js";

const versionOf = (name) => Number((/@(\d+)$/.exec(name) || [0, 1])[1]);
/** A golden call as kernel.plan() takes it: its inputs, and its profile as a stricter device than BASELINE. */
const callOf = (c) => [c.inputs, { attributes: c.attributes, tunables: c.tunables, limits: c.profile.limits,
                                   features: profileOf(c.profile).features }];
/** An answer as compared: the plan, or the refusal (name, reason, argument, failures, message). */
async function answer(kernel, c) {
  try {
    return JSON.stringify(await kernel.plan(...callOf(c)));
  } catch (e) {
    return JSON.stringify([e.name, e.reason, e.argument, e.failures, e.message]);
  }
}

/** Runs every golden call of `name` twice through a cached kernel of module `loader`; returns the hits whose answer
 * differs from the answer without a cache, as "case id (first|second pass)", and the counts. `renders`: each
 * accepted call of the first pass is rendered too, and a render answered from the kernel's rendered texts (a new
 * signature whose passes see what an earlier one's saw) is compared with the uncached kernel's render. */
async function onAgainstOff(loader, name, renders = false) {
  const source = publishedSource(name);
  const version = versionOf(name);
  // (a golden file holds more than the default 256 signatures: the second pass must find every one)
  const on = await loader.getKernel(source, { version, device: BASELINE, cache: { signatures: 10000 } });
  const off = await loader.getKernel(source, { version, device: BASELINE, cache: false });
  const fresh = new Map();   // case id -> the answer planned afresh (a miss, or the uncached kernel's)
  const differ = [];
  const hits = { first: 0, second: 0, renders: 0 };
  for (const pass of ["first", "second"]) {
    for (const c of goldenCases(name)) {
      const before = (await on.stats()).cacheHits;
      const got = await answer(on, c);
      if ((await on.stats()).cacheHits === before) {
        fresh.set(c.id, got);
        if (renders && got.startsWith("{")) {
          const reused = (await on.stats()).rendersReused;
          const text = await on.render(...callOf(c));
          if ((await on.stats()).rendersReused === reused) continue;
          hits.renders++;
          if (JSON.stringify(text) !== JSON.stringify(await off.render(...callOf(c)))) differ.push(`${c.id} (WGSL)`);
        }
        continue;
      }
      hits[pass]++;
      if (!fresh.has(c.id)) fresh.set(c.id, await answer(off, c));
      if (got !== fresh.get(c.id)) differ.push(`${c.id} (${pass} pass)`);
    }
  }
  const accepted = [...fresh.values()].filter((a) => a.startsWith("{")).length;
  return { differ, hits, calls: fresh.size, accepted, stats: await on.stats() };
}

const reference = { getKernel };

describe("the cache never changes an answer", () => {
  for (const name of packageNames()) {
    test(`every golden call of ${name}, twice: the cache's answers are the uncached ones`, async (t) => {
      const { differ, hits, calls, accepted, stats } = await onAgainstOff(reference, name, true);
      t.diagnostic(`${calls} calls (${accepted} accepted), twice: ${hits.first + hits.second} answered from the ` +
                   `cache, ${stats.planned} planned (a refusal is not cached); ${stats.rendered} passes rendered, ` +
                   `${hits.renders} renders of a new signature answered from the rendered texts`);
      assert.deepEqual(differ, []);
      assert.ok(hits.second >= accepted, `${hits.second} hits in the second pass: each accepted call is one`);
    });
  }
});

// -- planted cache-key bugs ------------------------------------------------------------------------------------------
/** Each signature field's line in src/signature.js, and a package whose golden calls differ in it alone. */
const PLANTS = {
  shapes: ["    shapes,", "com.microsoft.Softmax"],
  dtypes: ["    dtypes,", "com.microsoft.Gelu"],
  attributes: ["    entries(read.attributes),", "com.microsoft.Softmax"],
  tunables: ["    entries(read.tunables),", "com.microsoft.Gelu"],
  limits: ["    entries(read.limits),", "com.microsoft.Gelu"],
  features: ['    read.features ? JSON.stringify(read.features) : "*",', "com.microsoft.Softmax"],
};
const scratch = mkdtempSync(`${tmpdir()}/loader-plant-`);
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The loader's src/ copied with `old` (occurring once in src/<module>) replaced by `now`; its module. */
async function planted(field, old, now, module = "signature.js") {
  const dir = `${scratch}/${field}`;
  cpSync(`${LOADER}src`, `${dir}/src`, { recursive: true });
  symlinkSync(`${REPOSITORY}node_modules`, `${dir}/node_modules`, "dir");   // @huggingface/jinja, as from loader/
  const file = `${dir}/src/${module}`;
  const text = readFileSync(file, "utf-8");
  assert.equal(text.split(old).length, 2, `the plant's text occurs once in src/${module}: ${old}`);
  writeFileSync(file, text.replace(old, now));
  return import(`${dir}/src/index.js`);
}

describe("a signature field left out of the key fails the comparison", () => {
  for (const [field, [line, name]] of Object.entries(PLANTS)) {
    test(`${field} left out: ${name}'s calls that differ in it alone get each other's answers`, async (t) => {
      const { differ } = await onAgainstOff(await planted(field, line, '    "",'), name);
      t.diagnostic(`${differ.length} differ, the first: ${differ.slice(0, 3).join(", ")}`);
      assert.ok(differ.length > 0, `the comparison does not see ${field} left out of the key`);
    });
  }
});

/** Rendered texts kept under a key that leaves part of the template's context out (src/render.js). */
const RENDER_PLANTS = {
  "numbers": ['case "number": return Object.is(value, -0) ? "-0" : String(value);', 'case "number": return "n";',
              "com.microsoft.LayerNormalization@2"],
  "all but the variant": ["const key = this.texts === null ? null : contextKey(context);",
                          "const key = this.texts === null ? null : contextKey(context.variant);",
                          "com.microsoft.Softmax@2"],
};

describe("rendered texts kept under a key that leaves something out fail the comparison", () => {
  for (const [what, [old, now, name]] of Object.entries(RENDER_PLANTS)) {
    test(`${what} left out of a render's key: ${name}'s new signatures get other WGSL`, async (t) => {
      const { differ } = await onAgainstOff(await planted(`render-${what.replaceAll(" ", "-")}`, old, now,
                                                          "render.js"), name, true);
      t.diagnostic(`${differ.length} differ, the first: ${differ.slice(0, 3).join(", ")}`);
      assert.ok(differ.some((d) => d.endsWith("(WGSL)")), `the comparison does not see ${what} left out`);
    });
  }
});

// -- what a repeated signature costs, counted -----------------------------------------------------------------------
const kernelOf = (name, options = {}) => getKernel(publishedSource(name), { version: versionOf(name), device: BASELINE,
                                                                             ...options });
const LN = { X: { shape: [1, 128, 768], dtype: "float32" }, scale: { shape: [768], dtype: "float32" },
             bias: { shape: [768], dtype: "float32" } };

test("a repeated signature is neither planned nor rendered again", async () => {
  const kernel = await kernelOf("com.microsoft.LayerNormalization@2");
  const first = await kernel.plan(LN, { attributes: { epsilon: 1e-5 } });
  const wgsl = await kernel.render(LN, { attributes: { epsilon: 1e-5 } });
  for (let i = 0; i < 20; i++) {
    assert.deepEqual(await kernel.plan(LN, { attributes: { epsilon: 1e-5 } }), first);
    assert.deepEqual(await kernel.render(LN, { attributes: { epsilon: 1e-5 } }), wgsl);
  }
  const stats = await kernel.stats();
  assert.deepEqual([stats.planned, stats.rendered, stats.cacheHits, stats.cacheEntries], [1, wgsl.length, 41, 1]);
  await kernel.plan(LN, { attributes: { epsilon: 1e-3 } });   // another signature: planned once
  assert.equal((await kernel.stats()).planned, 2);
});

test("without a cache every call is planned and rendered", async () => {
  const kernel = await kernelOf("com.microsoft.Softmax@2", { cache: false });
  const X = { X: { shape: [1, 12, 128, 128], dtype: "float32" } };
  for (let i = 0; i < 5; i++) await kernel.render(X);
  const stats = await kernel.stats();
  assert.deepEqual([stats.planned, stats.rendered, stats.cacheHits, stats.cacheEntries], [5, 5, 0, 0]);
});

test("the cache is bounded: the least recently used signature is dropped, and planned again when it comes back",
     async () => {
       const kernel = await kernelOf("com.microsoft.Gelu@2", { cache: { signatures: 4 } });
       const X = (n) => ({ X: { shape: [n], dtype: "float32" } });
       for (let n = 1; n <= 10; n++) await kernel.plan(X(n));
       await kernel.plan(X(10));
       let stats = await kernel.stats();
       assert.deepEqual([stats.planned, stats.cacheHits, stats.cacheEntries, stats.cacheEvictions], [10, 1, 4, 6]);
       await kernel.plan(X(1));
       stats = await kernel.stats();
       assert.deepEqual([stats.planned, stats.cacheEntries, stats.cacheEvictions], [11, 4, 7]);
       for (const bad of [-1, 1.5, "8", { signatures: -2 }, { signatures: 2 ** 40 }]) {
         await assert.rejects(kernelOf("com.microsoft.Gelu", { cache: bad }), /options.cache must be/);
       }
     });

test("a plan the caller changes is the caller's: the next call's is the cache's own", async () => {
  const kernel = await kernelOf("com.microsoft.Gelu@2");
  const X = { X: { shape: [1, 128, 3072], dtype: "float32" } };
  const mine = await kernel.plan(X);
  const want = JSON.stringify(mine);
  mine.passes[0].dispatch.workgroups[0] = 0;
  mine.passes[0].constants.changed = true;
  mine.outputs.Y.shape.push(7);
  assert.equal(JSON.stringify(await kernel.plan(X)), want);
});

// -- the key ---------------------------------------------------------------------------------------------------------
describe("the key tells apart whatever may plan differently, and has none for what is not plain data", () => {
  const roles = ["X", "bias"];
  const key = (tensors, options = {}) => signatureKey(roles, tensors, snapshotOptions(options));
  const X = (shape, dtype = "float32") => ({ X: { shape, dtype } });

  test("each field, and the values' types", () => {
    const keys = [
      key(X([1, 2])), key(X([12])), key(X([1, 2], "float16")),
      key({ ...X([1, 2]), bias: { shape: [2], dtype: "f32" } }),
      key(X([1, 2]), { attributes: { epsilon: 0 } }), key(X([1, 2]), { attributes: { epsilon: -0 } }),
      key(X([1, 2]), { attributes: { epsilon: "0" } }), key(X([1, 2]), { attributes: { axis: true } }),
      key(X([1, 2]), { attributes: { axis: 1 } }), key(X([1, 2]), { tunables: { axis: 1 } }),
      key(X([1, 2]), { limits: { axis: 1 } }), key(X([1, 2]), { features: [] }), key(X([1, 2]), { features: ["a"] }),
      key(X([1, 2]), { attributes: { 'a":1,"b': 2 } }), key(X([1, 2]), { attributes: { a: 1, b: 2 } }),
    ];
    assert.equal(new Set(keys).size, keys.length, keys.join("\n---\n"));
    // what plans alike may key alike: absent and null, none and {}, features undefined and null
    assert.equal(key({ X: { shape: [3], dtype: "float32" }, bias: null }), key(X([3])));
    assert.equal(key(X([3]), { attributes: {}, limits: {}, features: null }), key(X([3])));
  });

  test("no key for what is not plain data: the call is planned without the cache", () => {
    for (const [tensors, options] of [
      [X(["2"]), {}], [X([2.5]), {}], [X([-1]), {}], [X("2"), {}], [X([2], 7), {}],
      [X([2]), { attributes: [1] }], [X([2]), { attributes: { a: [1] } }], [X([2]), { limits: { a: {} } }],
      [X([2]), { tunables: { a: 1n } }], [X([2]), { features: "shader-f16" }], [X([2]), { features: [1] }],
      [X([2]), { attributes: "axis" }], [X([2]), { features: new Set(["shader-f16"]) }],
    ]) {
      assert.equal(key(tensors, options), null, JSON.stringify([tensors, options], (_, v) => (
        typeof v === "bigint" ? `${v}n` : v instanceof Set ? [...v] : v)));
    }
  });

  test("a call without a key is answered as without a cache, and caches nothing", async () => {
    const on = await kernelOf("com.microsoft.Gelu");
    const off = await kernelOf("com.microsoft.Gelu", { cache: false });
    const calls = [[X(["8"])], [X([8]), { features: "shader-f16" }], [X([8]), { tunables: "WORKGROUP_SIZE" }],
                   [X([8]), { limits: { maxComputeWorkgroupSizeX: {} } }],
                   [X([8]), { tunables: { WORKGROUP_SIZE: 1n } }]];
    for (const call of calls) {
      const mine = async (k) => {
        try { return JSON.stringify(await k.plan(...call)); } catch (e) { return `${e.name}: ${e.message}`; }
      };
      assert.equal(await mine(on), await mine(off));
    }
    assert.equal((await on.stats()).cacheEntries, 0);
  });

  test("an attribute read through a getter is read once: what is keyed is what is planned", async () => {
    const kernel = await kernelOf("com.microsoft.LayerNormalization");
    const shapes = { X: { shape: [4, 8], dtype: "float32" }, scale: { shape: [8], dtype: "float32" } };
    let reads = 0;
    const attributes = { get epsilon() { return ++reads === 1 ? 1e-5 : 0.5; } };
    const planned = await kernel.plan(shapes, { attributes });
    assert.equal(reads, 1);
    assert.deepEqual(await kernel.plan(shapes, { attributes: { epsilon: 1e-5 } }), planned);
    assert.equal((await kernel.stats()).planned, 1);
  });

  test("Lru drops the least recently used and says so", () => {
    const dropped = [];
    const lru = new Lru(2, (value, k) => dropped.push([k, value]));
    lru.set("a", 1);
    lru.set("b", 2);
    lru.get("a");
    lru.set("c", 3);
    assert.deepEqual([[...lru.map.keys()], dropped, lru.evicted], [["a", "c"], [["b", 2]], 1]);
  });
});
