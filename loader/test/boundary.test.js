// Bad input at the loader's boundary is a ContractError naming the role, and a package that is not the published
// one (a file whose sha256 differs from metadata.json's, a file missing, a version not published) is a
// PackageError naming the file or the version, before anything is planned. No GPU: kernel() checks its inputs
// before it touches the device, and the device stand-in only has limits and features.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ContractError, PackageError, getKernel } from "@webgpu-kernels/loader";
import { BASELINE, outcome, publishedSource } from "./helpers.js";

const GELU = "com.microsoft.Gelu";
const TEMPLATE = "elementwise-bias-gelu.wgsl.jinja";
const X = (data, shape) => ({ X: { data, shape } });
const kernel = await getKernel(publishedSource(GELU), { device: BASELINE, version: 1 });

describe("a good call", () => {
  test("plans, and a Uint16Array is float16 bits", async () => {
    assert.equal((await kernel.plan(X(new Float32Array(8), [2, 4]))).variant, "vec4");
    assert.equal((await kernel.plan(X(new Uint16Array(8), [8]))).outputs.Y.dtype, "float16");
    assert.equal((await kernel.plan({ X: { shape: [8], dtype: "float32" } })).variant, "vec4", "{shape, dtype}");
  });
  test("without a version the newest published is loaded", async () => {
    assert.equal((await getKernel(publishedSource(GELU), { device: BASELINE })).version, 2);
    assert.equal(kernel.version, 1);
    assert.equal(kernel.manifest.name, "Gelu");
  });
});

describe("bad input is a ContractError naming the role", () => {
  const cases = {
    "data-length": [X(new Float32Array(7), [2, 4]), "X", "shape [2,4] has 8 elements but data has 7"],
    dtype: [X(new Int32Array(8), [2, 4]), "X", "input 'X' has dtype int32; type T allows float32, float16"],
    "data-type": [X([1, 2, 3, 4], [4]), "X", "data is an Array of 4; expected Float32Array"],
    "missing-input": [{}, "X", "input 'X' is required by com.microsoft.Gelu but absent"],
    "unknown-argument": [{ ...X(new Float32Array(4), [4]), Z: { data: new Float32Array(1), shape: [1] } }, "Z",
                         "has no input 'Z'; inputs are X"],
    shape: [X(new Float32Array(4), [2, -2]), "X", "must be an array of non-negative integers"],
    argument: [{ X: 7 }, "X",
               "expected {data: TypedArray, shape: [...]} or {buffer: GPUBuffer, shape: [...], dtype}, got a number"],
  };
  for (const [reason, [inputs, role, words]] of Object.entries(cases)) {
    test(reason, async () => {
      const got = await outcome(() => kernel(inputs));
      assert.equal(got.name, "ContractError", got.message);
      assert.deepEqual([got.reason, got.argument], [reason, role], got.message);
      assert.ok(got.message.includes(words), got.message);
    });
  }
  test("the inputs themselves must be an object", async () => {
    const got = await outcome(() => kernel(null));
    assert.deepEqual([got.name, got.reason], ["ContractError", "argument"]);
  });
  test("and it is the exported class", async () => {
    await assert.rejects(kernel({}), ContractError);
  });
});

describe("a package that is not the published one is refused, naming the file", () => {
  const tampered = {
    "a template changed": [(files, v) => { if (v === 1) files[TEMPLATE] = new Uint8Array([...files[TEMPLATE], 10]); },
                           `version 1/${TEMPLATE}`, "does not match metadata.json's"],
    "the manifest changed": [(files, v) => { if (v === 1) files["manifest.json"] = new Uint8Array([32]); },
                             "version 1/manifest.json", "does not match metadata.json's"],
    "a template missing": [(files, v) => { if (v === 1) delete files[TEMPLATE]; }, `version 1/${TEMPLATE}`,
                           "missing (metadata.json lists it)"],
    "metadata.json not JSON": [(files, v) => { if (v === 1) files["metadata.json"] = new Uint8Array([123]); },
                               "version 1/metadata.json", "not JSON"],
  };
  for (const [label, [edit, file, words]] of Object.entries(tampered)) {
    test(label, async () => {
      const source = publishedSource(GELU);
      edit(source.versions[1], 1);
      const got = await outcome(() => getKernel(source, { device: BASELINE, version: 1 }));
      assert.equal(got.name, "PackageError", got.message);
      assert.equal(got.file, file);
      assert.ok(got.message.includes(words), got.message);
    });
  }
  test("a version not published, or not an integer", async () => {
    const missing = await outcome(() => getKernel(publishedSource(GELU), { device: BASELINE, version: 3 }));
    assert.equal(missing.name, "PackageError");
    assert.ok(missing.message.includes("version 3 is not published (published: 1, 2): no metadata.json"),
              missing.message);
    await assert.rejects(getKernel(publishedSource(GELU), { device: BASELINE, version: "1" }),
                         (e) => e instanceof PackageError && /version must be an integer from 1 to 1000, got "1"/
                           .test(e.message));
  });
});
