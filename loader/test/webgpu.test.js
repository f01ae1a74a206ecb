// The loader on a real GPUDevice: test/webgpu-checks.js, run as a child process (Dawn for Node aborts at the exit of
// a process node:test ends) in Node with Dawn for Node (npm `webgpu`: here OpenGL ES on llvmpipe, no shader-f16) and
// in Deno (npm `@deno/linux-x64-glibc`: wgpu on lavapipe, with shader-f16), each where it is installed; where neither
// is, these tests are skipped, saying why, and `npm test` passes on what needs no GPU. The checks count what was done
// (stats(): plans, renders, compilations, buffers created and reused, submissions), never time: speed is
// bench/loader-bench.js's.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { after, describe, test } from "node:test";
import { LOADER, REPOSITORY, goldenCases, packageNames } from "./helpers.js";

const require = createRequire(import.meta.url);
const scratch = mkdtempSync(`${tmpdir()}/loader-webgpu-`);
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Golden calls to run on the device: per package, up to 6 accepted calls of the baseline profile, spread over its
 * golden file, none of more than 2**16 elements an input. */
function someCases() {
  const out = [];
  for (const name of packageNames()) {
    const accepted = goldenCases(name).filter((c) => c.expect.outcome === "accepted" && !c.heavy &&
      (c.profile.name === "baseline" || !c.profile.name) && !c.profile.limits &&
      Object.values(c.inputs).every((t) => !t || t.shape.reduce((a, b) => a * b, 1) <= 2 ** 16));
    const step = Math.max(1, Math.floor(accepted.length / 6));
    for (let i = 0; i < accepted.length && out.filter((c) => c.name === name).length < 6; i += step) {
      const c = accepted[i];
      out.push({ id: c.id, name, inputs: c.inputs, attributes: c.attributes || {}, tunables: c.tunables || {} });
    }
  }
  return out;
}

const casesFile = `${scratch}/cases.json`;
writeFileSync(casesFile, JSON.stringify(someCases()));
const CHECKS = `${LOADER}test/webgpu-checks.js`;

/** How to run the checks in each runtime, or why it cannot. */
function runtimes() {
  const out = {};
  try {
    require.resolve("webgpu");
    out.node = { command: process.execPath, args: [CHECKS, casesFile],
                 env: { ...process.env, EGL_PLATFORM: process.env.EGL_PLATFORM || "surfaceless" } };
  } catch {
    out.node = { skip: "no npm package webgpu (Dawn for Node): `npm ci` at the repository's root installs it" };
  }
  const deno = process.env.LOADER_DENO || `${REPOSITORY}node_modules/@deno/linux-x64-glibc/deno`;
  let jinja = null;
  try {
    jinja = require.resolve("@huggingface/jinja").replace(/[^/]*$/, "index.js");
  } catch { /* reported below */ }
  if (!existsSync(deno) || !jinja) {
    out.deno = { skip: `no Deno at ${deno} (npm @deno/linux-x64-glibc, or LOADER_DENO)` };
  } else {
    const map = `${scratch}/import_map.json`;
    writeFileSync(map, JSON.stringify({ imports: { "@huggingface/jinja": pathToFileURL(jinja).href } }));
    out.deno = { command: deno, args: ["run", "--unstable-webgpu", "--no-config", "--no-remote", "--no-npm",
                                       `--import-map=${map}`, "--allow-read", "--allow-env", CHECKS, casesFile],
                 env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR || scratch } };
  }
  return out;
}

for (const [runtime, how] of Object.entries(runtimes())) {
  describe(`on a GPUDevice in ${runtime}`, () => {
    let answer = null;
    let why = how.skip || null;
    if (!why) {
      const run = spawnSync(how.command, how.args, { env: how.env, encoding: "utf-8", timeout: 180_000 });
      const line = (run.stdout || "").split("\n").find((l) => l.startsWith("@checks "));
      if (!line) {
        why = null;
        answer = { failed: `the checks gave no answer (exit ${run.status}, signal ${run.signal}): ` +
                           `${(run.stderr || "").split("\n").filter((l) => !/Warning|XDG_RUNTIME/.test(l)).join(" ")
                             .slice(-2000)}` };
      } else {
        answer = JSON.parse(line.slice("@checks ".length));
        if (answer.unavailable) why = answer.unavailable;
      }
    }
    if (why) {
      test(`skipped: ${why}`, { skip: why }, () => {});
      return;
    }
    if (answer.failed) {
      test("the checks ran", () => assert.fail(answer.failed));
      return;
    }
    for (const [name, got] of Object.entries(answer.checks)) {
      test(name, (t) => {
        t.diagnostic(`${answer.runtime}, ${answer.how}, ${answer.adapter}` +
                     (answer.features.includes("shader-f16") ? ", shader-f16" : ""));
        for (const note of got.notes) t.diagnostic(note);
        assert.ok(got.ok, got.message);
      });
    }
  });
}
