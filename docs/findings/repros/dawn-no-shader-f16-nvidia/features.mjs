// What each WebGPU implementation offers on this machine's adapter, shader-f16 first.
//   node features.mjs [path/to/node_modules/webgpu/index.js]     (Dawn for Node)
//   deno run --unstable-webgpu features.mjs                        (Deno: wgpu)
const isDeno = typeof globalThis.Deno !== "undefined";
let gpu = globalThis.navigator && navigator.gpu;
if (!isDeno) {
  const where = process.argv[2] || "webgpu";
  const { create, globals } = await import(where.startsWith("/") ? `file://${where}` : where);
  Object.assign(globalThis, globals);
  gpu = create([]);
}
const adapter = await gpu.requestAdapter();
if (!adapter) { console.log("no adapter"); } else {
  const info = adapter.info || {};
  console.log(JSON.stringify({ runtime: isDeno ? `deno ${Deno.version.deno}` : `node ${process.versions.node}`,
    adapter: info.description || info.device, vendor: info.vendor, shaderF16: adapter.features.has("shader-f16"),
    features: [...adapter.features].sort() }));
}
if (!isDeno) process.exit(0);
