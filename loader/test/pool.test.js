// The buffer pool of a device's Runtime (src/gpu.js), on a stand-in device that records what is created and destroyed:
// size classes, reuse, what a recording not yet submitted holds, and the bounds (POOL_BYTES, POOL_BUFFERS), whose
// byte bound a real device here could not show without hundreds of megabytes. (test/webgpu.test.js: the same on a
// real GPUDevice, through kernels.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { POOL_BUFFERS, POOL_BYTES, Recording, Runtime, sizeClass } from "../src/gpu.js";

class FakeBuffer {
  constructor(size, usage) {
    this.size = size;
    this.usage = usage;
    this.destroyed = false;
  }

  destroy() { this.destroyed = true; }
}

const fakeDevice = () => ({
  submitted: 0,
  createBuffer({ size, usage }) { return new FakeBuffer(size, usage); },
  createCommandEncoder() { return { finish: () => ({}) }; },
  pushErrorScope() {},
  popErrorScope: async () => null,
  queue: { submit() { fakeDevice.submitted++; } },
});
const U = 0x80 | 0x4 | 0x8;   // STORAGE | COPY_SRC | COPY_DST

test("size classes: 4 per octave, at least what was asked, at most a quarter more, 256 bytes the least", () => {
  for (let n = 1; n < 1 << 22; n = Math.ceil(n * 1.07) + 3) {
    const c = sizeClass(n);
    assert.ok(c >= n && c % 4 === 0 && c <= Math.max(256, n * 1.25), `${n} -> ${c}`);
  }
  assert.deepEqual([1, 256, 257, 320, 321, 1024, 1025].map(sizeClass), [256, 256, 320, 320, 384, 1024, 1280]);
});

test("a buffer given back is handed out again for its usage and size class, the one freed longest ago first; not " +
     "pooled, it is destroyed", () => {
  const rt = new Runtime(fakeDevice());
  const a = rt.take(U, 1000, true);
  assert.equal(a.size, 1024);
  rt.give(a);
  assert.ok(rt.released(a));
  assert.equal(rt.take(U, 1010, true), a);                       // the same class
  assert.notEqual(rt.take(U | 0x10, 1000, true), a);             // another usage
  rt.give(a);
  assert.notEqual(rt.take(U, 2000, true), a);                    // another class
  assert.deepEqual([rt.created, rt.reused, rt.destroyed], [3, 1, 0]);
  const [x, y] = [rt.take(U, 4000, true), rt.take(U, 4000, true)];
  rt.give(x);
  rt.give(y);
  assert.deepEqual([rt.take(U, 4000, true), rt.take(U, 4000, true)], [x, y]);   // in the order they were freed
  const own = rt.take(U, 1000, false);                           // cache: false
  assert.equal(own.size, 1000);
  rt.give(own);
  assert.ok(own.destroyed && rt.released(own));
});

test("what a recording not yet submitted uses is neither handed out nor destroyed before its submission", () => {
  const rt = new Runtime(fakeDevice());
  const rec = new Recording(rt);
  const a = rt.take(U, 1000, true);
  const b = rt.take(U, 1000, false);
  rt.hold(rec, a);
  rt.hold(rec, b);
  rt.hold(rec, b);
  rt.give(a);
  rt.give(b);
  assert.ok(rt.released(a) && !b.destroyed);
  assert.notEqual(rt.take(U, 1000, true), a);
  rec.encoder = rt.device.createCommandEncoder();
  rt.submit(rec);
  assert.ok(b.destroyed);
  assert.equal(rt.take(U, 1000, true), a);
  assert.equal(rt.submits, 1);
});

test("buffers only a recording uses are destroyed once it is submitted", () => {
  const rt = new Runtime(fakeDevice());
  const rec = new Recording(rt);
  const u = rt.device.createBuffer({ size: 16, usage: 0x40 });
  rec.owned.push(u);
  rt.submit(rec);
  rt.submit(rec);
  assert.ok(u.destroyed && rt.released(u));
  assert.equal(rt.destroyed, 1);
});

test(`the pool keeps at most ${POOL_BYTES} free bytes and ${POOL_BUFFERS} free buffers, the oldest destroyed first`,
     () => {
       const rt = new Runtime(fakeDevice());
       const big = Array.from({ length: 5 }, () => rt.take(U, 64 * 2 ** 20, true));
       for (const b of big) rt.give(b);
       assert.ok(rt.freeBytes <= POOL_BYTES);
       assert.deepEqual(big.map((b) => b.destroyed), [true, false, false, false, false]);
       const small = Array.from({ length: POOL_BUFFERS + 10 }, () => rt.take(U, 100, true));
       for (const b of small) rt.give(b);
       assert.equal(rt.freeOrder.size, POOL_BUFFERS);
       assert.ok(big.every((b) => b.destroyed), "the older big buffers went first");
       assert.equal(small.map((b) => b.destroyed).indexOf(false), 10);   // 4 big and the 10 oldest small went
       assert.equal(rt.freeBytes, [...rt.freeOrder].reduce((n, b) => n + b.size, 0));
     });
