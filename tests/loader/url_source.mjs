// The card's lines against a local package directory: getKernel(URL, {version}) fetching metadata.json,
// manifest.json and the template (a fetch over file: URLs, as a static server would answer). Prints JSON.
// Usage: node url_source.mjs <loader index.js URL> <package directory file URL> <limits JSON file>
import { readFile } from "node:fs/promises";

const { getKernel } = await import(process.argv[2]);
const limits = JSON.parse(await readFile(process.argv[4], "utf-8"));
const device = { limits, features: new Set(["shader-f16"]) };
const fetchFile = async (url) => {
  try {
    return new Response(await readFile(new URL(url)));
  } catch {
    return new Response(null, { status: 404 });
  }
};
const out = {};
for (const version of [1, 2, undefined]) {
  const kernel = await getKernel(process.argv[3], { version, device, fetch: fetchFile });
  out[String(version)] = { version: kernel.version, variant: (await kernel.plan({ X: { data: new Float32Array(5), shape: [5] } })).variant };
}
process.stdout.write(JSON.stringify(out));
