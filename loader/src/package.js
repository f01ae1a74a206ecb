// A package's files: from a URL (version 1 at `source`, version N beside it at `source@N`, each holding
// metadata.json, manifest.json and the templates, as the card's build/webgpu/) or handed over in memory
// ({versions: {1: {"metadata.json": ..., ...}, 2: {...}}}, each file a string or a Uint8Array). Every file is
// checked against metadata.json's sha256 before anything is planned or rendered.
import { PackageError } from "./errors.js";
import { sha256 } from "./digest.js";
import { readManifest } from "./manifest.js";
import { has, own } from "./own.js";

const MAX_VERSION = 1000;
const decoder = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();
const asBytes = (x) => (typeof x === "string" ? encoder.encode(x) : x);

function urlSource(source, fetchFn) {
  const base = String(source).replace(/\/+$/, "");
  const dir = (version) => (version === 1 ? `${base}/` : `${base}@${version}/`);
  return {
    label: base,
    async read(version, name) {
      let response;
      try {
        const directory = new URL(dir(version), globalThis.location ? globalThis.location.href : undefined);
        response = await fetchFn(new URL(name, directory).href);
      } catch (err) {
        throw new PackageError(`cannot fetch: ${err.message}`, { file: `${dir(version)}${name}` });
      }
      if (response.status === 404) return null;
      if (!response.ok) throw new PackageError(`HTTP ${response.status}`, { file: `${dir(version)}${name}` });
      return new Uint8Array(await response.arrayBuffer());
    },
    where: (version, name) => `${dir(version)}${name}`,
  };
}

function memorySource(source) {
  const versions = source.versions;
  return {
    label: "the package handed over",
    async read(version, name) {
      const files = own(versions, version);
      if (!has(files, name)) return null;
      const data = asBytes(files[name]);
      if (!(data instanceof Uint8Array)) {
        throw new PackageError("a file must be a string or a Uint8Array", { file: `version ${version}/${name}` });
      }
      return data;
    },
    where: (version, name) => `version ${version}/${name}`,
  };
}

/** The newest version present when `version` is undefined (versions are consecutive from 1). */
async function pickVersion(src, version) {
  if (version !== undefined) {
    if (!Number.isInteger(version) || version < 1 || version > MAX_VERSION) {
      throw new PackageError(`version must be an integer from 1 to ${MAX_VERSION}, got ${JSON.stringify(version)}`);
    }
    if ((await src.read(version, "metadata.json")) === null) {
      const published = [];
      for (let v = 1; v <= MAX_VERSION && (await src.read(v, "metadata.json")) !== null; v++) published.push(v);
      throw new PackageError(`version ${version} is not published (published: ${published.join(", ") || "none"}): ` +
                             "no metadata.json", { file: src.where(version, "metadata.json") });
    }
    return version;
  }
  let newest = 0;
  while (newest < MAX_VERSION && (await src.read(newest + 1, "metadata.json")) !== null) newest++;
  if (newest === 0) {
    throw new PackageError("no published version: no metadata.json", { file: src.where(1, "metadata.json") });
  }
  return newest;
}

function text(bytes, where) {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new PackageError("not UTF-8 text", { file: where });
  }
}

/** {manifest, templates, where, metadata, version} of one version, every file checked against metadata.json
 * (`templates`: name -> text; `where`: name -> where it was read, what an error about it names).
 * @param {import("../types/index.js").PackageSource} source
 * @param {{version?: number, fetch?: (url: string) => Promise<import("../types/index.js").FetchedFile>}} [options]
 */
export async function loadPackage(source, { version, fetch: fetchFn = globalThis.fetch } = {}) {
  const src = typeof source === "object" && source !== null && source.versions ? memorySource(source)
                                                                                : urlSource(source, fetchFn);
  const chosen = await pickVersion(src, version);
  const metaWhere = src.where(chosen, "metadata.json");
  let metadata;
  try {
    metadata = JSON.parse(text(await src.read(chosen, "metadata.json"), metaWhere));
  } catch (err) {
    throw err instanceof PackageError ? err : new PackageError(`not JSON: ${err.message}`, { file: metaWhere });
  }
  if (!metadata?.manifest || typeof metadata.manifest.sha256 !== "string" ||
      typeof metadata.templates !== "object") {
    throw new PackageError("metadata.json must give manifest.sha256 and templates {name: sha256}", { file: metaWhere });
  }
  const checked = async (name, want) => {
    const where = src.where(chosen, name);
    const bytes = await src.read(chosen, name);
    if (bytes === null) throw new PackageError("missing (metadata.json lists it)", { file: where });
    const got = await sha256(bytes);
    if (got !== want) {
      throw new PackageError(`sha256 ${got} does not match metadata.json's ${want}: the file is not the one ` +
                             "published", { file: where });
    }
    return text(bytes, where);
  };
  const manifestText = await checked(metadata.manifest.file || "manifest.json", metadata.manifest.sha256);
  let raw;
  try {
    raw = JSON.parse(manifestText);
  } catch (err) {
    throw new PackageError(`not JSON: ${err.message}`, { file: src.where(chosen, "manifest.json") });
  }
  const manifest = readManifest(raw, src.where(chosen, "manifest.json"));
  if (manifest.version !== chosen) {
    throw new PackageError(`the manifest says version ${manifest.version}, it is published as version ${chosen}`,
                           { file: src.where(chosen, "manifest.json") });
  }
  const templates = [];
  for (const name of manifest.shaders) {
    const digest = own(metadata.templates, name);
    if (typeof digest !== "string") {
      throw new PackageError(`metadata.json gives no sha256 for template ${name}`, { file: metaWhere });
    }
    templates.push([name, await checked(name, digest)]);
  }
  return { manifest, templates: Object.fromEntries(templates), metadata, version: chosen,
           where: Object.fromEntries(manifest.shaders.map((name) => [name, src.where(chosen, name)])) };
}
