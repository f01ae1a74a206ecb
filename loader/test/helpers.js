// What the loader's tests share: the repository's shipped packages (../specs) laid out as published (metadata.json
// with the sha256 of the manifest and of every template, as `python -m conformance export` writes it), the golden
// calls of ../cases, and a device stand-in (WebGPU's default limits and shader-f16: what the golden files call the
// baseline profile). Nothing here needs a GPU: planning and rendering read a device's limits and features only.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";

export const LOADER = fileURLToPath(new URL("..", import.meta.url));
export const REPOSITORY = fileURLToPath(new URL("../..", import.meta.url));
export const SPECS = `${REPOSITORY}specs`;
export const CASES = `${REPOSITORY}cases`;

/** WebGPU's default limits (conformance/engine/profile.py DEFAULT_LIMITS; tests/loader holds the two equal). */
export const DEFAULT_LIMITS = JSON.parse(readFileSync(new URL("webgpu-default-limits.json", import.meta.url), "utf-8"));

/** The device the golden files' baseline profile describes. */
export const BASELINE = Object.freeze({ limits: { ...DEFAULT_LIMITS }, features: new Set(["shader-f16"]) });

const encoder = new TextEncoder();
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

/** The package directories of ../specs (each holding a manifest.json), by name. */
export function packageNames() {
  if (!existsSync(SPECS)) throw new Error(`${SPECS}: the loader's tests run on the repository's shipped packages`);
  return readdirSync(SPECS, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(`${SPECS}/${d.name}/manifest.json`)).map((d) => d.name).sort();
}

export const readManifestJson = (name) => JSON.parse(readFileSync(`${SPECS}/${name}/manifest.json`, "utf-8"));

/** One package directory as published: {"metadata.json", "manifest.json", <template>: bytes}. `edit(files)` may
 * change the files before metadata.json is written (a template that is still the published one). */
export function publishedFiles(directory, edit = null) {
  const manifestBytes = readFileSync(`${directory}/manifest.json`);
  const manifest = JSON.parse(manifestBytes.toString("utf-8"));
  const shaders = [...new Set(manifest.variants.flatMap((v) => v.passes.map((p) => p.shader)))].sort();
  const files = { "manifest.json": new Uint8Array(manifestBytes) };
  for (const name of shaders) files[name] = new Uint8Array(readFileSync(`${directory}/${name}`));
  if (edit) edit(files);
  const metadata = {
    package: `${manifest.domain}.${manifest.name}`, version: manifest.version ?? 1,
    manifest: { file: "manifest.json", sha256: sha256(files["manifest.json"]) },
    templates: Object.fromEntries(shaders.map((name) => [name, sha256(files[name])])),
  };
  return { "metadata.json": encoder.encode(`${JSON.stringify(metadata, null, 1)}\n`), ...files };
}

/** Every published version of the op of `name` (version 1 in <op>/, N in <op>@N/) as getKernel's in-memory source;
 * `edit(files, version)` as in publishedFiles. */
export function publishedSource(name, edit = null) {
  const op = name.replace(/@\d+$/, "");
  const versions = {};
  for (let v = 1; existsSync(`${SPECS}/${v === 1 ? op : `${op}@${v}`}/manifest.json`); v++) {
    versions[v] = publishedFiles(`${SPECS}/${v === 1 ? op : `${op}@${v}`}`, edit && ((files) => edit(files, v)));
  }
  return { versions };
}

/** The golden cases of package `name` (../cases/<name>.yaml). */
export function goldenCases(name) {
  const path = `${CASES}/${name}.yaml`;
  if (!existsSync(path)) throw new Error(`${path}: no golden file (python -m cases writes them)`);
  return parseYaml(readFileSync(path, "utf-8")).cases;
}

/** A golden case's profile as planning takes it: the baseline with the case's limits, features dropped or added. */
export function profileOf(profile) {
  const features = new Set(BASELINE.features);
  for (const f of profile.drop_features || []) features.delete(f);
  for (const f of profile.add_features || []) features.add(f);
  return { limits: { ...DEFAULT_LIMITS, ...(profile.limits || {}) }, features: [...features].sort() };
}

/** What a rejected call gives a test to compare: {name, reason, argument, failures, message, file}. */
export async function outcome(fn) {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    return { name: e.name, reason: e.reason ?? null, argument: e.argument ?? null, failures: e.failures ?? null,
             message: e.message, file: e.file ?? null, limit: e.limit ?? null };
  }
}
