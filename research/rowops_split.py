"""LayerNorm with each row split over several workgroups, two dispatches: does it beat one workgroup per row?

Issue 39 asks LayerNormalization to reach 0.9 of the best copy at every model shape. At [1, 128, 4096] (a 7B
decoder, sequence 128) version 2 runs one workgroup per row, 128 workgroups on the H200's 132 SMs, and even its
floor (the same layout doing no arithmetic, ``research/rowops_sweep.py``) stays near 0.8. A portable kernel
cannot wait for another workgroup (WebGPU promises no forward progress between them), so a row spread over
``k`` workgroups needs a second dispatch:

* ``stats``: workgroup (row, c) reduces its chunk of ``items / k`` vec4 to the chunk's mean and M2 (two passes
  over registers, as version 2 does for a whole row) and writes them;
* ``normalize``: each workgroup merges its row's k pairs (Chan's formula, equal counts: the same accuracy class as
  two passes), reads its chunk again (from L2: the first dispatch just read it) and writes y.

This script renders that kernel (f32, vec4 rows, with bias), checks its output against a float64 reference on the
device, and times it beside the shipped LayerNormalization@2 and the best copy on the same buffers, as ``bench``
does (``bench.measure_call``; the split kernel's bytes are counted as version 2's: x, scale, bias, y):

    python research/rowops_split.py OUT.json [--webgpu wgpu] [--shapes 1x128x4096,...] [--chunks 2,4,8]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conformance.engine.layout import split_workgroups
from conformance.engine.package import REPO_SPECS, load_package
from conformance.gpu.device import get_device
from conformance.gpu.kernel import Kernel
from conformance.gpu.timing import Timer
from conformance.tools import bench

G = 16  # the lanes of a reduction's first stage (each sums WG / G partials), as version 2's tree for <= 512 lanes


def _pairwise(terms: list[str]) -> str:
    """The sum of ``terms`` as a balanced tree (version 2's summation order)."""
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return f"({_pairwise(terms[:half])} + {_pairwise(terms[half:])})"


def _reduce(name: str, value: str, wg: int) -> str:
    """``let name`` = the sum of ``value`` over the workgroup, known to every lane after two barriers."""
    firsts = [f"partial[t + {i * G}u]" for i in range(wg // G)]
    return (
        f"  partial[t] = {value};\n  workgroupBarrier();\n"
        f"  if (t < {G}u) {{ partial_next[t] = {_pairwise(firsts)}; }}\n  workgroupBarrier();\n"
        f"  let {name} = {_pairwise([f'partial_next[{g}u]' for g in range(G)])};\n"
    )


PARAMS = "struct Params { rows: u32, items: u32, epsilon: f32, invCols: f32 }\n"


@dataclass(frozen=True)
class Split:
    """The split kernel's sizing for a shape: ``chunks`` workgroups per row of ``items`` vec4, ``wg`` lanes each
    holding ``per_thread`` vec4 of its chunk."""

    chunks: int
    items: int
    wg: int
    per_thread: int

    @classmethod
    def of(cls, cols: int, chunks: int) -> "Split":
        if cols % 4 or (cols // 4) % chunks:
            raise ValueError(f"a row of {cols} elements does not split into {chunks} chunks of whole vec4")
        chunk = cols // 4 // chunks
        wg = min(256, -(-chunk // G) * G)
        return cls(chunks, cols // 4, wg, -(-chunk // wg))

    @property
    def chunk(self) -> int:
        return self.items // self.chunks

    def _loads(self, var: str = "v") -> str:
        return "".join(
            f"  let j{p} = t + {p * self.wg}u;\n  let in{p} = j{p} < {self.chunk}u;\n"
            f"  var {var}{p} = vec4<f32>(0.0);\n  if (in{p}) {{ {var}{p} = x[base + j{p}]; }}\n"
            for p in range(self.per_thread)
        )

    def _head(self) -> str:
        return (
            f"const WG: u32 = {self.wg}u;\nconst CHUNKS: u32 = {self.chunks}u;\n"
            "fn lanes(v: vec4<f32>) -> f32 { return (v.x + v.y) + (v.z + v.w); }\n"
            "@compute @workgroup_size(WG)\n"
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
            "        @builtin(local_invocation_index) t: u32) {\n"
            "  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);\n"
            "  if (g >= params.rows * CHUNKS) { return; }\n"
            "  let row = g / CHUNKS;\n"
            f"  let base = row * params.items + (g % CHUNKS) * {self.chunk}u;\n"
        )

    def stats_shader(self) -> str:
        """Dispatch 1: each workgroup's chunk -> (mean, M2) in stats[g]."""
        ps = range(self.per_thread)
        m = 4 * self.chunk
        return (
            PARAMS + "@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;\n"
            "@group(0) @binding(1) var<storage, read_write> stats: array<vec2<f32>>;\n"
            "@group(0) @binding(2) var<uniform> params: Params;\n"
            "var<workgroup> partial: array<f32, WG>;\nvar<workgroup> partial_next: array<f32, 16>;\n"
            + self._head()
            + self._loads()
            + _reduce("total", f"lanes({_pairwise([f'v{p}' for p in ps])})", self.wg)
            + f"  let mean = total * {1.0 / m!r};\n"
            + "".join(f"  let d{p} = select(vec4<f32>(0.0), v{p} - vec4<f32>(mean), in{p});\n" for p in ps)
            + _reduce("m2", f"lanes({_pairwise([f'd{p} * d{p}' for p in ps])})", self.wg)
            + "  if (t == 0u) { stats[g] = vec2<f32>(mean, m2); }\n}\n"
        )

    def normalize_shader(self) -> str:
        """Dispatch 2: the row's k (mean, M2) merged (equal counts), then its chunk normalized."""
        m = 4 * self.chunk
        stats = [f"stats[row * CHUNKS + {c}u]" for c in range(self.chunks)]
        body = "".join(f"  let s{c} = {s};\n" for c, s in enumerate(stats))
        body += f"  let mean = {_pairwise([f's{c}.x' for c in range(self.chunks)])} * {1.0 / self.chunks!r};\n"
        body += "".join(f"  let e{c} = s{c}.x - mean;\n" for c in range(self.chunks))
        body += (
            f"  let m2 = {_pairwise([f's{c}.y' for c in range(self.chunks)])} + {float(m)!r} * "
            f"{_pairwise([f'e{c} * e{c}' for c in range(self.chunks)])};\n"
            "  let rstd = inverseSqrt(m2 * params.invCols + params.epsilon);\n"
        )
        col = f"(g % CHUNKS) * {self.chunk}u"
        writes = "".join(
            f"  if (in{p}) {{ y[base + j{p}] = (v{p} - vec4<f32>(mean)) * rstd * scale[{col} + j{p}] "
            f"+ bias[{col} + j{p}]; }}\n"
            for p in range(self.per_thread)
        )
        return (
            PARAMS + "@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;\n"
            "@group(0) @binding(1) var<storage, read> stats: array<vec2<f32>>;\n"
            "@group(0) @binding(2) var<storage, read> scale: array<vec4<f32>>;\n"
            "@group(0) @binding(3) var<storage, read> bias: array<vec4<f32>>;\n"
            "@group(0) @binding(4) var<storage, read_write> y: array<vec4<f32>>;\n"
            "@group(0) @binding(5) var<uniform> params: Params;\n"
            + self._head()
            + body
            + self._loads()
            + writes
            + "}\n"
        )


class SplitLayerNorm:
    """The split kernel bound to one call's buffers on ``device``: ``record(cpass)`` records both dispatches."""

    def __init__(self, device, split: Split, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, epsilon: float):
        dev, usage = device.device, __import__("wgpu").BufferUsage
        self.split, self.shape = split, x.shape
        rows = x.size // x.shape[-1]
        self.buffers = {
            name: dev.create_buffer_with_data(
                data=np.ascontiguousarray(a, np.float32).tobytes(), usage=usage.STORAGE | usage.COPY_SRC
            )
            for name, a in (("x", x), ("scale", scale), ("bias", bias))
        }
        self.buffers["y"] = dev.create_buffer(size=x.nbytes, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
        self.buffers["stats"] = dev.create_buffer(size=8 * rows * split.chunks, usage=usage.STORAGE)
        params = (
            np.array([rows, split.items], np.uint32).tobytes()
            + np.array([epsilon, 1.0 / x.shape[-1]], np.float32).tobytes()
        )
        self.buffers["params"] = dev.create_buffer_with_data(data=params, usage=usage.UNIFORM)
        self.counts = split_workgroups(rows * split.chunks, device.profile.limits["maxComputeWorkgroupsPerDimension"])
        self.steps = []
        for code, names in (
            (split.stats_shader(), ("x", "stats", "params")),
            (split.normalize_shader(), ("x", "stats", "scale", "bias", "y", "params")),
        ):
            pipeline = dev.create_compute_pipeline(
                layout="auto", compute={"module": dev.create_shader_module(code=code), "entry_point": "main"}
            )
            group = dev.create_bind_group(
                layout=pipeline.get_bind_group_layout(0),
                entries=[
                    {"binding": i, "resource": {"buffer": self.buffers[n], "offset": 0, "size": self.buffers[n].size}}
                    for i, n in enumerate(names)
                ],
            )
            self.steps.append((pipeline, group))
        self.device = device

    def record(self, cpass) -> None:
        for pipeline, group in self.steps:
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*self.counts)

    def run(self) -> np.ndarray:
        dev = self.device.device
        encoder = dev.create_command_encoder()
        cpass = encoder.begin_compute_pass()
        self.record(cpass)
        cpass.end()
        dev.queue.submit([encoder.finish()])
        return np.frombuffer(dev.queue.read_buffer(self.buffers["y"]), np.float32).reshape(self.shape).copy()

    def release(self) -> None:
        for buf in self.buffers.values():
            buf.destroy()


def reference(x, scale, bias, epsilon):
    """LayerNorm over the last axis in float64."""
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon) * scale + bias


def inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(3.0, 2.0, shape).astype(np.float32)
    return x, rng.normal(1.0, 0.5, shape[-1]).astype(np.float32), rng.normal(0.0, 0.5, shape[-1]).astype(np.float32)


def measure_split(device, timer, baselines, shape, chunks, epsilon=1e-5) -> dict:
    """One row: the split kernel's error against the float64 reference and its time against the best copy."""
    x, scale, bias = inputs(shape)
    kernel = SplitLayerNorm(device, Split.of(shape[-1], chunks), x, scale, bias, epsilon)
    try:
        err = float(np.max(np.abs(kernel.run() - reference(x, scale, bias, epsilon))))
        timing, copies = baselines.measure(kernel.record, kernel.buffers["x"], kernel.buffers["y"], x.nbytes)
    finally:
        kernel.release()
    best = max(2 * x.nbytes / t.median for t in copies.values()) / 1e9
    moved = 2 * x.nbytes + scale.nbytes + bias.nbytes
    return {
        "config": f"split{chunks}",
        "shape": list(shape),
        "chunks": chunks,
        "max_abs_error": err,
        "seconds": timing.median,
        "spread": timing.spread,
        "best_copy_gbps": best,
        "best_copy_ratio": moved / timing.median / 1e9 / best,
    }


def measure_v2(kernel, timer, baselines, shape) -> dict:
    """The shipped LayerNormalization@2 (vec4_bias) on the same shape, as ``bench`` measures it."""
    args = {"X": (shape, "float32"), "scale": ((shape[-1],), "float32"), "bias": ((shape[-1],), "float32")}
    row = bench.measure_call(kernel, args, timer, baselines)
    return {
        "config": "v2",
        "shape": list(shape),
        "variant": row.variant,
        "seconds": row.seconds,
        "spread": row.spread,
        "best_copy_gbps": row.best_copy_gbps,
        "best_copy_ratio": row.best_copy_ratio,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--webgpu", default="wgpu")
    ap.add_argument("--shapes", default="1x128x768,1x512x768,1x128x1024,1x512x1024,1x128x4096,1x512x4096")
    ap.add_argument("--chunks", default="2,4,8")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup-seconds", type=float, default=0.2)
    args = ap.parse_args()
    device = get_device("vulkan", None, args.webgpu)
    timer = Timer(device, reps=args.reps, warmup_seconds=args.warmup_seconds)
    baselines = bench.Baselines(device, timer)
    v2 = Kernel(load_package(REPO_SPECS / "com.microsoft.LayerNormalization@2"), device)
    result = {"device": device.summary, "webgpu": args.webgpu, "rows": []}
    for text in args.shapes.split(","):
        shape = tuple(int(n) for n in text.split("x"))
        result["rows"].append(measure_v2(v2, timer, baselines, shape))
        for chunks in (int(c) for c in args.chunks.split(",")):
            if (shape[-1] // 4) % chunks == 0:
                result["rows"].append(measure_split(device, timer, baselines, shape, chunks))
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for r in result["rows"]:
        print(
            f"{r['config']:<8}{str(r['shape']):<18}{r['seconds'] * 1e6:8.2f} us {r['best_copy_ratio']:7.3f}"
            f"  {r.get('max_abs_error', '')}"
        )


if __name__ == "__main__":
    main()
