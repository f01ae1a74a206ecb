// The package as npm and its users see it: one entry per audience ("." a page, "./plan" a planner without WebGPU,
// "./jinja" a host of @huggingface/jinja), each a module and its hand-written types declaring exactly what it
// exports, no name exported by two entries; `engines` that this Node meets; `files` publishing the modules and
// their types and nothing else (setup.py copies the same into the suite's wheel); the dependencies pinned as the
// repository's root package.json pins them; no line of code over 120 characters.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";
import { LOADER, REPOSITORY } from "./helpers.js";

const pkg = JSON.parse(readFileSync(`${LOADER}package.json`, "utf-8"));
const ENTRIES = { ".": "@webgpu-kernels/loader", "./plan": "@webgpu-kernels/loader/plan",
                  "./jinja": "@webgpu-kernels/loader/jinja" };

/** The value names a .d.ts declares as exports (functions, constants, classes; not types). */
function declared(file) {
  const text = readFileSync(`${LOADER}${file}`, "utf-8");
  return [...text.matchAll(/^export (?:declare )?(?:function|const|class) (\w+)/gm)].map((m) => m[1])
    .filter((n, i, all) => all.indexOf(n) === i).sort();
}

test("the entries are the three audiences', each a module with its types", () => {
  assert.deepEqual(Object.keys(pkg.exports), Object.keys(ENTRIES));
  for (const [entry, target] of Object.entries(pkg.exports)) {
    assert.deepEqual(Object.keys(target), ["types", "default"], `${entry}: types first, as TypeScript reads them`);
    assert.ok(existsSync(`${LOADER}${target.default}`) && existsSync(`${LOADER}${target.types}`), entry);
  }
  assert.equal(pkg.types, pkg.exports["."].types);
  assert.equal(pkg.type, "module");
});

test("each entry exports what its types declare, and no name is exported by two entries", async () => {
  const seen = new Map();
  for (const [entry, specifier] of Object.entries(ENTRIES)) {
    const names = Object.keys(await import(specifier)).sort();
    assert.deepEqual(names, declared(pkg.exports[entry].types), `${entry}: the module's exports and its types`);
    for (const name of names) {
      assert.ok(!seen.has(name), `${name} is exported by ${seen.get(name)} and ${entry}`);
      seen.set(name, entry);
    }
  }
});

test("engines names the Node it runs on, and this Node meets it", () => {
  const least = /^>=(\d+)(?:\.(\d+))?$/.exec(pkg.engines.node);
  assert.ok(least, pkg.engines.node);
  const [major, minor] = process.versions.node.split(".").map(Number);
  assert.ok(major > Number(least[1]) || (major === Number(least[1]) && minor >= Number(least[2] ?? 0)));
});

test("npm publishes the modules, their types, README.md and package.json: no tests", () => {
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const [packed] = JSON.parse(execFileSync(npm, ["pack", "--dry-run", "--json", "--ignore-scripts"],
                                           { cwd: LOADER, encoding: "utf-8", stdio: ["ignore", "pipe", "ignore"] }));
  const files = packed.files.map((f) => f.path).sort();
  const want = ["README.md", "package.json", ...["src", "types"].flatMap((d) => readdirSync(`${LOADER}${d}`)
    .map((f) => `${d}/${f}`))].sort();
  assert.deepEqual(files, want);
  assert.deepEqual(pkg.files, ["src/", "types/"]);
});

test("the dependencies are pinned, as the repository's root package.json pins them", () => {
  const pins = { ...pkg.dependencies, ...pkg.devDependencies };
  for (const [name, version] of Object.entries(pins)) assert.match(version, /^\d+\.\d+\.\d+$/, name);
  const root = `${REPOSITORY}package.json`;
  if (!existsSync(root)) return;   // the package outside this repository
  const installed = JSON.parse(readFileSync(root, "utf-8"));
  const rootPins = { ...installed.dependencies, ...installed.devDependencies };
  for (const [name, version] of Object.entries(pins)) assert.equal(rootPins[name], version, name);
});

test("no line of code runs past 120 characters", () => {
  const long = [];
  for (const dir of ["src", "types", "test", "test/types"]) {
    for (const f of readdirSync(`${LOADER}${dir}`).filter((n) => /\.(js|ts|json)$/.test(n))) {
      readFileSync(`${LOADER}${dir}/${f}`, "utf-8").split("\n").forEach((line, i) => {
        if (line.length > 120) long.push(`${dir}/${f}:${i + 1} (${line.length})`);
      });
    }
  }
  assert.deepEqual(long, []);
});
