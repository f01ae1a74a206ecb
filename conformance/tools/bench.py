"""``python -m conformance bench``: kernel bandwidth against same-run copy baselines, and tuning.

Every figure is a ratio to baselines measured in the same run on the same
device (``copy_buffer_to_buffer`` and a vec4 copy shader moving the same bytes),
so runs on different days and devices compare.  Kernel time comes from GPU
timestamp queries where the device has them (wall clock otherwise, said so).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from conformance.engine.layout import split_workgroups
from conformance.errors import ContractError
from conformance.gpu import tuning
from conformance.gpu.device import Device
from conformance.gpu.kernel import Kernel
from conformance.gpu.runtime import Runtime
from conformance.gpu.timing import Timer, Timing
from conformance.ops.record import manifest_bench_inputs
from conformance.ops.registry import find
from conformance.tools.peers import run_peers

SIZES = [4 << 10 << (2 * i) for i in range(9)]  # 4 Ki .. 256 Mi elements
WORKGROUP_SWEEP = [32, 64, 128, 256, 512, 1024]

COPY_SHADER = """
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * 256u + lid;
  if (i < arrayLength(&dst)) { dst[i] = src[i]; }
}
"""


@dataclass
class Row:
    package: str
    variant: str
    dtype: str
    shape: list
    bias: bool
    workgroup_size: int
    bytes_moved: int
    seconds: float
    spread: float
    method: str
    gbps: float
    copy_shader_gbps: float
    copy_buffer_gbps: float
    settled: bool | None = None  # the GPU's speed had stopped changing before every timing (None: wall clock)
    inputs: dict | None = None   # role -> shape of every input fed (the op record's bench inputs)

    @property
    def vs_shader(self) -> float:
        return self.gbps / self.copy_shader_gbps if self.copy_shader_gbps else math.nan

    @property
    def vs_buffer(self) -> float:
        return self.gbps / self.copy_buffer_gbps if self.copy_buffer_gbps else math.nan


def _sample(shape, dtype, seed=0) -> np.ndarray:
    """Cheap, non-trivial data of any size: a random block tiled."""
    block = np.random.default_rng(seed).normal(0, 2, 1 << 16).astype(dtype)
    return np.resize(block, int(np.prod(shape, dtype=np.int64))).reshape(shape)


class Baselines:
    """Copy bandwidth measured on the very buffers a kernel reads and writes.

    A baseline is comparable only when it moves the kernel's own input into the
    kernel's own output under the same conditions: its passes are interleaved with
    the kernel's in one timing. That only partly protects the ratio from a slow GPU
    state: at the H200's idle 345 MHz SM clock (see Timer) the copy fell to 1.66 TB/s
    and compute-heavy kernels fell further (an f16 tail variant: 0.56 instead of 0.82).
    """

    def __init__(self, device: Device, timer: Timer):
        self.device, self.timer = device, timer
        dev = device.device
        self._pipeline = dev.create_compute_pipeline(layout="auto", compute={
            "module": dev.create_shader_module(code=COPY_SHADER), "entry_point": "main"})

    @staticmethod
    def copy_bytes(nbytes: int) -> int:
        """What the copies move for ``nbytes``: whole vec4<u32>, at least one."""
        return max(16, nbytes // 16 * 16)

    def shader_pass(self, src, dst, nbytes: int):
        """A pass recorder for the vec4 copy shader moving ``copy_bytes(nbytes)`` src -> dst."""
        nbytes = self.copy_bytes(nbytes)
        group = self.device.device.create_bind_group(layout=self._pipeline.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": nbytes}},
            {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": nbytes}}])
        counts = split_workgroups(-(-nbytes // 16 // 256), self.device.profile.limits["maxComputeWorkgroupsPerDimension"])

        def shader(cpass):
            cpass.set_pipeline(self._pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*counts)
        return shader

    def measure(self, kernel_pass, src, dst, nbytes: int) -> tuple[Timing, Timing, Timing]:
        """(kernel, vec4 copy shader, copy_buffer_to_buffer) timings; kernel and copy shader interleaved."""
        kernel, shader = self.timer.time_passes([kernel_pass, self.shader_pass(src, dst, nbytes)])
        copied = self.copy_bytes(nbytes)
        return kernel, shader, self.timer.time_encoder(lambda enc: enc.copy_buffer_to_buffer(src, 0, dst, 0, copied),
                                                       warm=True)


def bench_calls(kernel: Kernel, sizes, dtypes):
    """Calls per size: an aligned shape [n/1024, 1024] and an unaligned [n+1], each optional input present or not;
    every required input fed, as the op record's bench inputs say (the manifest's ranks without a record)."""
    manifest = kernel.manifest
    optional = [s for s in manifest.inputs if s.optional]
    record = find(manifest.op_id)
    for n in sizes:
        for dtype in dtypes:
            for shape in ([n // 1024, 1024] if n % 1024 == 0 else [n], [n + 1]):
                for with_optional in ([False, True] if optional else [False]):
                    make = record.bench_call if record is not None else manifest_bench_inputs
                    yield make(manifest, shape, dtype, with_optional), with_optional


def measure_call(kernel: Kernel, args, timer: Timer, baselines: Baselines, tunables=None) -> Row | None:
    try:
        plan = kernel.plan(tunables=tunables, **args)
    except ContractError:
        return None
    arrays = {role: (_sample(shape, np.dtype(dtype)) if shape is not None else None)
              for role, (shape, dtype) in args.items()}
    runtime = Runtime(kernel.device, kernel.package)
    bound = runtime.bind(plan, {spec.role: arrays.get(spec.role) for spec in kernel.manifest.inputs})
    first = plan.passes[0].bindings
    x = next(b for b in first if b.buffer_type == "read-only-storage")
    y = next(b for b in first if b.buffer_type == "storage")
    try:
        timing, shader, buffer = baselines.measure(bound.record, bound.buffers[x.arg], bound.buffers[y.arg],
                                                   x.byte_size)
    finally:
        bound.release()
    moved = sum(b.byte_size for p in plan.passes for b in p.bindings if b.buffer_type != "uniform")
    x_bytes = x.byte_size
    dtype = next(iter(args.values()))[1]
    main_shape = next(iter(args.values()))[0]
    return Row(kernel.manifest.op_id, plan.variant, dtype, list(main_shape), len(args) > 1,
               plan.passes[0].dispatch.workgroup_size, moved, timing.median, timing.spread, timing.method,
               moved / timing.median / 1e9, 2 * x_bytes / shader.median / 1e9, 2 * x_bytes / buffer.median / 1e9,
               _all_settled(timing, shader, buffer), {r: list(a[0]) for r, a in args.items() if a is not None})


def _all_settled(*timings: Timing) -> bool | None:
    """False if any timestamp timing never settled, True if all did, None when none was settled (wall clock)."""
    known = [t.settled for t in timings if t.settled is not None]
    return all(known) if known else None


def _progress(done: int, total: int, label: str) -> None:
    if not sys.stderr.isatty():
        return
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:50]:<50}")
    sys.stderr.flush()
    if done == total:
        sys.stderr.write("\n")


def run_bench(kernels: list[Kernel], *, min_elements: int = 0, max_elements: int, reps: int, sweep: bool, write_tuning: bool,
              out: Path | None, plot: Path | None, warmup_seconds: float = 1.0, peers: bool = False) -> dict:
    """Rows for every reachable variant and size (and the sweep, and with ``peers`` the peer rows), written
    to ``out`` and ``plot`` when given."""
    device = kernels[0].device
    timer = Timer(device, reps=reps, warmup_seconds=warmup_seconds)
    baselines = Baselines(device, timer)
    limit = min(device.profile.limits["maxStorageBufferBindingSize"], device.profile.limits["maxBufferSize"])
    sizes = [n for n in SIZES if min_elements <= n <= max_elements and (n + 1) * 4 <= limit]
    dtypes = ["float32"] + (["float16"] if "shader-f16" in device.profile.features else [])
    work = [(k, args) for k in kernels for args, _ in bench_calls(k, sizes, dtypes)]
    rows = []
    for i, (kernel, args) in enumerate(work, 1):
        _progress(i, len(work), f"{kernel.manifest.name} {args}")
        row = measure_call(kernel, args, timer, baselines)
        if row:
            rows.append(row)
    best = sweep_workgroups(kernels, timer, baselines, sizes[-1], dtypes) if sweep else []
    result = {"device": device.summary, "timing": timer.copies_timed and "timestamp" or
              ("timestamp (kernels), wall clock (copy_buffer_to_buffer)" if timer.passes_timed else "wall clock"),
              "timestamp_period_ns": timer.period, "rows": [asdict(r) | {"vs_copy_shader": r.vs_shader,
                                                                          "vs_copy_buffer": r.vs_buffer}
                                                             for r in rows],
              "tuning": best}
    if write_tuning and best:
        path = tuning.write(device, best, None if write_tuning is True else Path(write_tuning))
        result["tuning_table"] = str(path)
    if peers:
        result["peers"] = run_peers(result, max_elements)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
    if plot:
        plot_rows(result["rows"], plot, device.summary.get("adapter", "device"))
    return result


def sweep_workgroups(kernels, timer, baselines, size, dtypes) -> list[dict]:
    """Best WORKGROUP_SIZE per (package, dtype, variant) at ``size`` elements."""
    cap = min(kernels[0].device.profile.limits["maxComputeInvocationsPerWorkgroup"],
              kernels[0].device.profile.limits["maxComputeWorkgroupSizeX"])
    best = []
    for kernel in kernels:
        if "WORKGROUP_SIZE" not in kernel.manifest.tunables:
            continue
        for args, _ in bench_calls(kernel, [size], dtypes):
            results = {}
            for wg in [w for w in WORKGROUP_SWEEP if w <= cap]:
                row = measure_call(kernel, args, timer, baselines, tunables={"WORKGROUP_SIZE": wg})
                if row:
                    results[wg] = row
            if results:
                default = kernel.manifest.tunables["WORKGROUP_SIZE"]
                pick = choose({wg: r.gbps for wg, r in results.items()}, default)
                top = results[pick]
                best.append({"package": kernel.manifest.op_id, "dtype": top.dtype, "variant": top.variant,
                             "WORKGROUP_SIZE": pick, "gbps": top.gbps,
                             "sweep": {wg: r.gbps for wg, r in results.items()}})
    return best


#: A tuned value must beat the manifest default by this much to replace it; closer is measurement noise.
TUNING_MARGIN = 0.02


def choose(sweep: dict[int, float], default: int) -> int:
    """The fastest WORKGROUP_SIZE, unless the manifest default is within TUNING_MARGIN of it."""
    fastest = max(sweep, key=sweep.get)
    if default in sweep and sweep[default] >= (1 - TUNING_MARGIN) * sweep[fastest]:
        return default
    return fastest


def format_table(result: dict) -> str:
    lines = [f"device: {result['device'].get('adapter')} ({result['device'].get('backend')}); timing: "
             f"{result['timing']}",
             f"{'package':<24}{'variant':<20}{'dtype':<9}{'elements':>11}{'wg':>6}{'GB/s':>9}{'spread':>8}"
             f"{'/copy-shader':>14}{'/copy-buffer':>14}"]
    for r in result["rows"]:
        n = int(np.prod(r["shape"]))
        lines.append(f"{r['package']:<24}{r['variant']:<20}{r['dtype']:<9}{n:>11}{r['workgroup_size']:>6}"
                     f"{r['gbps']:>9.1f}{r['spread']:>8.3f}{r['vs_copy_shader']:>14.3f}{r['vs_copy_buffer']:>14.3f}"
                     + ("  unsettled: GPU speed still changing" if r.get("settled") is False else ""))
    for t in result.get("tuning", []):
        lines.append(f"tuning: {t['package']} {t['dtype']} {t['variant']}: WORKGROUP_SIZE {t['WORKGROUP_SIZE']} "
                     f"({t['gbps']:.1f} GB/s; sweep {', '.join(f'{k}:{v:.0f}' for k, v in t['sweep'].items())})")
    return "\n".join(lines)


def plot_rows(rows: list[dict], path: Path, title: str) -> None:
    """Bandwidth against bytes moved, one line per package/variant/dtype, copy baselines dashed."""
    try:
        import matplotlib  # optional (the bench extra): only plots need it
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # (see above)
    except ImportError:
        print("plot skipped: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return
    fig, (ax, ratio_ax) = plt.subplots(2, 1, figsize=(9, 9), sharex=True)
    series: dict = {}
    for r in rows:
        series.setdefault((r["package"].split(".")[-1], r["variant"], r["dtype"], r["bias"]), []).append(r)
    for (pkg, variant, dtype, _), rs in sorted(series.items()):
        rs.sort(key=lambda r: r["bytes_moved"])
        label = f"{pkg} {variant} {dtype}"
        ax.plot([r["bytes_moved"] for r in rs], [r["gbps"] for r in rs], marker="o", ms=3, label=label)
        ratio_ax.plot([r["bytes_moved"] for r in rs], [r["vs_copy_shader"] for r in rs], marker="o", ms=3,
                      label=label)
    pts = sorted({(r["bytes_moved"], r["copy_shader_gbps"]) for r in rows})
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "k.", ms=4, label="vec4 copy shader (same buffers)")
    ratio_ax.axhline(1.0, color="k", ls="--", lw=0.8)
    ratio_ax.axhline(0.9, color="k", ls=":", lw=0.8)
    ax.set_xscale("log")
    ratio_ax.set_xlabel("bytes moved per call")
    ax.set_ylabel("GB/s")
    ratio_ax.set_ylabel("kernel / copy shader on the same buffers")
    ax.set_title(f"GELU kernels vs copy baselines: {title}")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
