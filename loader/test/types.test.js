// The types: TypeScript (a pinned devDependency, installed by `npm ci` at the repository's root) checks
// tsconfig.json's program: the hand-written types/ of each entry, the sources against them (checkJs on their
// JSDoc) and test/types/usage.ts, a user's code against the entries, whose @ts-expect-error lines must be errors.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { test } from "node:test";
import { LOADER } from "./helpers.js";

test("tsc finds no error in the types, the sources or a user's code", () => {
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  } catch {
    assert.fail("no TypeScript: `npm ci` (at the repository's root) installs the pinned devDependency");
  }
  const run = spawnSync(process.execPath, [tsc, "-p", `${LOADER}tsconfig.json`], { encoding: "utf-8" });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
