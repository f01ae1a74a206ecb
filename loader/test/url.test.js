// The card's lines against package directories laid out as published (metadata.json beside the manifest, version
// N beside version 1 as <op>@N/), read through `fetch` as a static server answers: a 404 for a file that is not
// there. getKernel(URL, {version}) loads version 1, 2, or with no version the newest.
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { getKernel } from "@webgpu-kernels/loader";
import { BASELINE, SPECS, outcome, publishedFiles } from "./helpers.js";

const scratch = mkdtempSync(`${tmpdir()}/loader-url-`);
after(() => rmSync(scratch, { recursive: true, force: true }));
for (const name of ["com.microsoft.Gelu", "com.microsoft.Gelu@2"]) {
  mkdirSync(`${scratch}/${name}`);
  for (const [file, bytes] of Object.entries(publishedFiles(`${SPECS}/${name}`))) {
    writeFileSync(`${scratch}/${name}/${file}`, bytes);
  }
}
const fetched = [];
const fetchFile = async (url) => {
  fetched.push(url);
  try {
    return new Response(await readFile(new URL(url)));
  } catch {
    return new Response(null, { status: 404 });
  }
};
const source = pathToFileURL(`${scratch}/com.microsoft.Gelu`).href;
const X5 = { X: { data: new Float32Array(5), shape: [5] } };

for (const [version, variant] of [[1, "scalar"], [2, "vec4_tail"], [undefined, "vec4_tail"]]) {
  test(`getKernel(URL, { version: ${version} })`, async () => {
    const kernel = await getKernel(source, { version, device: BASELINE, fetch: fetchFile });
    assert.equal(kernel.version, version ?? 2);
    assert.equal((await kernel.plan(X5)).variant, variant);
  });
}

test("a trailing slash is the same package, and version N is read beside it", async () => {
  fetched.length = 0;
  await getKernel(`${source}/`, { version: 2, device: BASELINE, fetch: fetchFile });
  assert.ok(fetched.every((u) => u.startsWith(`${source}@2/`)), fetched.join(" "));
});

test("a server error names the file; a version not there is not published", async () => {
  const failing = async () => new Response(null, { status: 500 });
  const got = await outcome(() => getKernel(source, { version: 1, device: BASELINE, fetch: failing }));
  assert.deepEqual([got.name, got.file], ["PackageError", `${source}/metadata.json`]);
  assert.ok(got.message.endsWith("HTTP 500"), got.message);
  const missing = await outcome(() => getKernel(source, { version: 3, device: BASELINE, fetch: fetchFile }));
  assert.ok(missing.message.includes("version 3 is not published (published: 1, 2)"), missing.message);
});
