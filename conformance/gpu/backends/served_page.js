// The served page's transport (served.py): say hello, then poll the suite's server for batches, run each with
// the one page runtime (page_runtime.js: window.__wgpu.run) and post the answer with the next poll. Shows the
// column's progress and, at the end, its verdict. The column survives reloads: its id and key are kept in
// sessionStorage (or given in the URL, ?client=ID&key=KEY, by a launcher such as the Firefox column).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const log = (text) => { $("log").textContent = (`${text}\n${$("log").textContent}`).slice(0, 20000); };
  const post = async (path, body) => {
    const r = await fetch(path, { method: "POST", body: JSON.stringify(body), cache: "no-store" });
    if (!r.ok) throw new Error(`${path}: HTTP ${r.status} ${(await r.text()).slice(0, 200)}`);
    return r.json();
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function show(p) {
    if (!p || p.total === undefined) return;
    $("bar").max = p.total || 1;
    $("bar").value = p.done || 0;
    $("status").textContent = `${p.column || ""} ${p.done} / ${p.total} cases, ${p.failed} failed so far`;
    if (p.verdict) $("verdict").textContent = `verdict: ${p.verdict}`;
  }

  // Wait until the GPU runs a dispatch: after a reload by the watchdog, a shader of the last page may still
  // occupy it; the suite's next batch is handed over only once this page says hello, after this.
  async function gpuReady() {
    const a = navigator.gpu && await navigator.gpu.requestAdapter();
    if (!a) {
      if (navigator.gpu) $("status").textContent = "this browser offers no WebGPU adapter (requestAdapter() " +
        "returned null: WebGPU off or blocklisted here); the server's verdict below says how to turn it on";
      return;
    }
    const d = await a.requestDevice();
    const code = "@group(0) @binding(0) var<storage, read_write> v: array<u32>;\n" +
                 "@compute @workgroup_size(1) fn main() { v[0] = 1u; }";
    const p = d.createComputePipeline({ layout: "auto", compute: { module: d.createShaderModule({ code }) } });
    const b = d.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE });
    const e = d.createCommandEncoder(), pass = e.beginComputePass();
    pass.setPipeline(p);
    pass.setBindGroup(0, d.createBindGroup({ layout: p.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: b } }] }));
    pass.dispatchWorkgroups(1);
    pass.end();
    d.queue.submit([e.finish()]);
    await d.queue.onSubmittedWorkDone();
    d.destroy();
  }

  async function main() {
    $("status").textContent = navigator.gpu ? "waiting for the GPU" :
      "this browser offers no WebGPU (no navigator.gpu: WebGPU off, or not a secure context: use https, " +
      "127.0.0.1 or localhost); the server's verdict below says how to turn it on";
    try { await gpuReady(); } catch (e) { log(`GPU check: ${e.message}`); }
    const hello = await post("hello", { client: params.get("client") || sessionStorage.getItem("wkc-client"),
                                        key: params.get("key") || sessionStorage.getItem("wkc-key"),
                                        userAgent: navigator.userAgent });
    sessionStorage.setItem("wkc-client", hello.client);
    sessionStorage.setItem("wkc-key", hello.key);
    window.__wgpu.setBlobBase(hello.blobBase);
    log(`column ${hello.client} (connection ${hello.generation})`);
    let seq = null, answer = null, error;
    for (;;) {
      let reply;
      try {
        const msg = { client: hello.client, key: hello.key, generation: hello.generation, seq, answer };
        if (error !== undefined) msg.error = error;
        reply = await post("poll", msg);
      } catch (e) {  // the server is busy or gone: try again, slowly
        log(`poll failed: ${e.message}`);
        await sleep(2000);
        continue;
      }
      seq = null; answer = null; error = undefined;
      show(reply.progress);
      if (reply.stale) { $("status").textContent = `stopped: ${reply.stale}`; return; }
      if (!reply.batch) continue;
      const b = reply.batch;
      // a batch that never ends (a shader that hangs) stalls this page: past the suite's timeout, reload it
      const watchdog = setTimeout(() => location.reload(), (b.timeout + 5) * 1000);
      try {
        answer = await window.__wgpu.run(b.cmds, b.uploads, b.inline);
      } catch (e) {
        error = `${e.name}: ${e.message}`;
      }
      clearTimeout(watchdog);
      seq = b.seq;
    }
  }
  main().catch((e) => { $("status").textContent = `stopped: ${e.message}`; });
})();
