"""``python -m conformance bench``: kernel bandwidth against same-run copy baselines, and tuning.

Every figure is a ratio to baselines measured in the same run on the same
device (``copy_buffer_to_buffer`` and a vec4 copy shader moving the same bytes),
so runs on different days and devices compare.  Kernel time comes from GPU
timestamp queries where the device has them (wall clock otherwise, said so).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from conformance.config import install_hint
from conformance.engine.layout import split_workgroups
from conformance.errors import ConformanceError, ContractError, MissingDependency
from conformance.gpu import tuning
from conformance.gpu.device import Device
from conformance.gpu.kernel import Kernel
from conformance.gpu.runtime import Runtime
from conformance.gpu.timing import Timer, Timing
from conformance.ops.record import manifest_bench_inputs
from conformance.ops.registry import find
from conformance.progress import Progress
from conformance.tools.peers import cuda_copy_baseline, run_peers
from conformance.tools.shapes import BenchShape, model_shapes

SIZES = [4 << 10 << (2 * i) for i in range(9)]  # 4 Ki .. 256 Mi elements
WORKGROUP_SWEEP = [32, 64, 128, 256, 512, 1024]


def copy_shader(per_thread: int = 1) -> str:
    """A copy shader moving ``per_thread`` vec4<u32> (16 bytes each) per invocation, strided by the workgroup so
    that every access of a workgroup stays coalesced (per_thread 1: the plain vec4 copy)."""
    return f"""
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let first = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * {256 * per_thread}u + lid;
  let n = arrayLength(&dst);
  for (var k = 0u; k < {per_thread}u; k++) {{
    let i = first + k * 256u;
    if (i < n) {{ dst[i] = src[i]; }}
  }}
}}
"""


def copy2_shader() -> str:
    """A copy of two inputs into one output (``dst = a ^ b``, one vec4<u32> of each per invocation): the
    baseline for a kernel that reads two tensors of its output's size, whose mix of two reads to one write
    the memory serves faster than a plain copy's one to one."""
    return """
@group(0) @binding(0) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * 256u + lid;
  if (i < arrayLength(&dst)) { dst[i] = a[i] ^ b[i]; }
}
"""


COPY_SHADER = copy_shader(1)
#: The two-input copy's name in ``copies_gbps``; its GB/s counts three streams (two read, one written).
COPY2 = "copy shader 2 inputs vec4<u32>"
#: The copy shaders behind ``best_copy``: vec4<u32> (16 bytes) per invocation, and wider (2 and 4 of them).
WIDE_COPIES = (2, 4)

#: Memory bandwidth the vendor specifies, GB/s, by a substring of the adapter name (only where known).
SPEC_PEAK_GBPS = {"H200": 4800.0, "H100 80GB HBM3": 3350.0, "H100 NVL": 3900.0, "A100-SXM4-80GB": 2039.0}

#: A kernel faster than the best copy by more than this (plus both timings' spreads) is a bench error.
RATIO_NOISE = 0.02
#: The copies timed beside the kernel below this fraction of the CUDA copy (timed on its own, after its own
#: warm-up): the two timings ran at different GPU clocks (the H200 figures behind the value: docs/bench/README.md).
CLOCK_MISMATCH = 0.6
CUDA_COPY = "CUDA device-to-device copy"


def spec_peak_gbps(adapter: str | None) -> float | None:
    for key, gbps in SPEC_PEAK_GBPS.items():
        if key in (adapter or ""):
            return gbps
    return None


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
    version: int = 1
    webgpu: str = "wgpu"
    copies_gbps: dict | None = None  # every copy behind best_copy: name -> GB/s (same bytes as the kernel's input)
    best_copy_gbps: float = math.nan  # the fastest of them
    best_copy: str = ""  # which one it was
    best_copy_spread: float = 0.0
    error: str | None = None  # a bench error (the kernel beat the best copy): not a result
    inputs: dict | None = None  # role -> shape of every input fed (the op record's bench inputs)
    source: str | None = None  # the model configurations a shape of --shapes/--shape comes from

    @property
    def best_copy_ratio(self) -> float:
        return self.gbps / self.best_copy_gbps if self.best_copy_gbps else math.nan

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

    def __init__(self, device: Device, timer: Timer, cuda_copy=None):
        self.device, self.timer = device, timer
        self.cuda_copy = cuda_copy  # nbytes -> (GB/s, spread) of a CUDA device-to-device copy, or None
        dev = device.device
        self._pipelines = {
            per: dev.create_compute_pipeline(
                layout="auto",
                compute={"module": dev.create_shader_module(code=copy_shader(per)), "entry_point": "main"},
            )
            for per in (1, *WIDE_COPIES)
        }
        self._pipeline = self._pipelines[1]
        self._pipeline2 = dev.create_compute_pipeline(
            layout="auto", compute={"module": dev.create_shader_module(code=copy2_shader()), "entry_point": "main"}
        )

    @staticmethod
    def copy_bytes(nbytes: int) -> int:
        """What the copies move for ``nbytes``: whole vec4<u32>, at least one."""
        return max(16, nbytes // 16 * 16)

    def shader_pass(self, src, dst, nbytes: int, per_thread: int = 1, src2=None):
        """A pass recorder for the copy shader of ``per_thread`` vec4 moving ``copy_bytes(nbytes)`` src -> dst
        (with ``src2``: the two-input copy, src ^ src2 -> dst)."""
        nbytes = self.copy_bytes(nbytes)
        pipeline = self._pipelines[per_thread] if src2 is None else self._pipeline2
        buffers = [src, dst] if src2 is None else [src, src2, dst]
        group = self.device.device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[
                {"binding": i, "resource": {"buffer": buf, "offset": 0, "size": nbytes}}
                for i, buf in enumerate(buffers)
            ],
        )
        counts = split_workgroups(
            -(-nbytes // 16 // (256 * per_thread)), self.device.profile.limits["maxComputeWorkgroupsPerDimension"]
        )

        def shader(cpass):
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*counts)

        return shader

    def measure(self, kernel_pass, src, dst, nbytes: int, src2=None) -> tuple[Timing, dict[str, Timing]]:
        """The kernel's timing and every copy's: the copy shaders (vec4<u32>, 2x and 4x vec4<u32> per invocation,
        and with ``src2``, a second input of the same size, the two-input copy) interleaved with the kernel in
        every repetition, then ``copy_buffer_to_buffer`` right after."""
        names = ["copy shader vec4<u32>"] + [f"copy shader {p}x vec4<u32>" for p in WIDE_COPIES]
        passes = [self.shader_pass(src, dst, nbytes, p) for p in (1, *WIDE_COPIES)]
        if src2 is not None:
            names.append(COPY2)
            passes.append(self.shader_pass(src, dst, nbytes, src2=src2))
        timings = self.timer.time_passes([kernel_pass] + passes)
        copied = self.copy_bytes(nbytes)
        copies = dict(zip(names, timings[1:]))
        copies["copy_buffer_to_buffer"] = self.timer.time_encoder(
            lambda enc: enc.copy_buffer_to_buffer(src, 0, dst, 0, copied), warm=True
        )
        return timings[0], copies


def bench_calls(kernel: Kernel, sizes, dtypes):
    """Calls per size: an aligned shape [n/1024, 1024] and an unaligned one, [n+1] or, for an op over rows,
    [n/1024, 1023] (one row of n+1 would measure one workgroup); each optional input present or not; every
    required input fed, as the op record's bench inputs say (the manifest's ranks without a record)."""
    record = find(kernel.manifest.op_id)
    for n in sizes:
        unaligned = [n // 1024, 1023] if record is not None and record.rows and n >= 1024 else [n + 1]
        for dtype in dtypes:
            for shape in ([n // 1024, 1024] if n % 1024 == 0 else [n], unaligned):
                yield from _calls_of(kernel, shape, dtype)


def _calls_of(kernel: Kernel, shape, dtype):
    """The calls of one primary ``shape``: each optional input absent, then present."""
    manifest = kernel.manifest
    record = find(manifest.op_id)
    make = record.bench_call if record is not None else manifest_bench_inputs
    for with_optional in [False, True] if any(s.optional for s in manifest.inputs) else [False]:
        yield make(manifest, list(shape), dtype, with_optional), with_optional


def kernel_shapes(kernel: Kernel, shapes) -> list[BenchShape]:
    """What ``shapes`` means for one kernel: ``"models"``, the shapes of the activation its op record names
    (none without a record or an activation); a list of BenchShape, those."""
    if shapes == "models":
        record = find(kernel.manifest.op_id)
        return model_shapes(record.activation) if record is not None and record.activation else []
    return list(shapes)


def shape_calls(kernel: Kernel, shapes, dtypes):
    """(call, source) for every shape of ``kernel_shapes`` in every dtype."""
    for bench_shape in kernel_shapes(kernel, shapes):
        for dtype in dtypes:
            for args, _ in _calls_of(kernel, bench_shape.shape, dtype):
                yield args, bench_shape.source


class NothingToBench(ConformanceError, ValueError):
    """A size range or shape list that leaves no call to time (an argument error, said as such)."""


def nothing_to_bench(kernels, min_elements: int, max_elements: int, shapes, limit: int) -> str:
    """Why a run has no call: the grid has no size in range, no package has a model shape, or every shape is
    above the device's binding limit."""
    if shapes is None:
        grid = ", ".join(_size_text(n) for n in SIZES)
        return (
            f"--min-elements {min_elements} --max-elements {max_elements}: no size of the built-in grid "
            f"({grid} elements) lies in that range below the device's binding limit of {limit} bytes; "
            f"bench one size with --shape N (e.g. --shape {max(min_elements, 1)})"
        )
    names = ", ".join(k.package.name for k in kernels)
    if shapes == "models":
        return (
            f"--shapes models: none of the packages ({names}) has an op record naming the model activation "
            f"it sees (OpRecord.activation)"
        )
    return (
        f"--shape {', '.join(','.join(map(str, s.shape)) for s in shapes)}: no package ({names}) accepts it "
        f"within the device's binding limit of {limit} bytes"
    )


def _size_text(n: int) -> str:
    return f"{n >> 20} Mi" if n >= 1 << 20 else f"{n >> 10} Ki"


def _call_text(args) -> str:
    return ", ".join(f"{role}{list(a[0])} {a[1]}" for role, a in args.items() if a is not None)


def measure_call(kernel: Kernel, args, timer: Timer, baselines: Baselines, tunables=None) -> Row | None:
    try:
        plan = kernel.plan(tunables=tunables, **args)
    except ContractError:
        return None
    arrays = {
        role: (_sample(shape, np.dtype(dtype)) if shape is not None else None) for role, (shape, dtype) in args.items()
    }
    runtime = Runtime(kernel.device, kernel.package)
    bound = runtime.bind(plan, {spec.role: arrays.get(spec.role) for spec in kernel.manifest.inputs})
    first = plan.passes[0].bindings
    x = next(b for b in first if b.buffer_type == "read-only-storage")
    y = next(b for b in first if b.buffer_type == "storage")
    x_bytes = arrays[x.arg].nbytes  # the whole tensor, even where x binds part of it (a split variant)
    second = next(
        (
            bound.buffers[r]
            for r, a in arrays.items()  # another input as large: two read streams
            if r != x.arg and a is not None and a.nbytes == x_bytes and r in bound.buffers
        ),
        None,
    )
    try:
        timing, copies = baselines.measure(
            bound.record, bound.buffers[x.arg], bound.buffers[y.arg], x_bytes, src2=second
        )
    finally:
        bound.release()
    moved = sum(b.byte_size for p in plan.passes for b in p.bindings if b.buffer_type != "uniform")
    dtype = next(iter(args.values()))[1]
    main_shape = next(iter(args.values()))[0]
    gbps = {name: (3 if name == COPY2 else 2) * x_bytes / t.median / 1e9 for name, t in copies.items()}
    spreads = {name: t.spread for name, t in copies.items()}
    if baselines.cuda_copy is not None:
        cuda = baselines.cuda_copy(2 * x_bytes)
        if cuda:
            gbps[CUDA_COPY], spreads[CUDA_COPY] = cuda
    best = max(gbps, key=gbps.get)
    row = Row(
        kernel.manifest.op_id,
        plan.variant,
        dtype,
        list(main_shape),
        len(args) > 1,
        plan.passes[0].dispatch.workgroup_size,
        moved,
        timing.median,
        timing.spread,
        timing.method,
        moved / timing.median / 1e9,
        gbps["copy shader vec4<u32>"],
        gbps["copy_buffer_to_buffer"],
        _all_settled(timing, *copies.values()),
        kernel.manifest.version,
        kernel.device.webgpu,
        gbps,
        gbps[best],
        best,
        spreads[best],
        inputs={r: list(arg[0]) for r, arg in args.items() if arg is not None},
    )
    row.error = bench_error(row)
    return row


def bench_error(row: Row) -> str | None:
    """Why a row is a bench error and not a result. Something is wrong with the measurement then, not with the
    kernel: the kernel moved bytes faster than the best copy could, beyond the noise (RATIO_NOISE plus both timings'
    spreads: a timing that missed work, a copy at idle clocks), or the copies timed beside the kernel ran far
    below the separately timed CUDA copy (CLOCK_MISMATCH: kernel and CUDA copy saw different clocks)."""
    limit = 1 + RATIO_NOISE + row.spread + row.best_copy_spread
    if row.best_copy_ratio > limit:
        return (
            f"bench error: {row.best_copy_ratio:.3f} of the best copy ({row.best_copy}, "
            f"{row.best_copy_gbps:.1f} GB/s) is above 1 + noise ({limit:.3f})"
        )
    copies = dict(row.copies_gbps or {})
    cuda = copies.pop(CUDA_COPY, None)
    if cuda and copies and max(copies.values()) < CLOCK_MISMATCH * cuda:
        beside = max(copies, key=copies.get)
        return (
            f"bench error: the copies timed with the kernel ran at {copies[beside]:.1f} GB/s ({beside}), "
            f"below {CLOCK_MISMATCH} of the CUDA copy timed on its own ({cuda:.1f} GB/s): the GPU's clocks "
            f"differed between the two timings (a longer --warmup-seconds keeps them up)"
        )
    return None


def _all_settled(*timings: Timing) -> bool | None:
    """False if any timestamp timing never settled, True if all did, None when none was settled (wall clock)."""
    known = [t.settled for t in timings if t.settled is not None]
    return all(known) if known else None


def run_bench(
    kernels: list[Kernel],
    *,
    min_elements: int = 0,
    max_elements: int,
    reps: int,
    sweep: bool,
    write_tuning: bool,
    out: Path | None,
    plot: Path | None,
    warmup_seconds: float = 1.0,
    peers: bool = False,
    cuda_copy: bool = True,
    max_calls: int | None = None,
    shapes=None,
) -> dict:
    """Rows for every reachable variant and size on the kernels' device (and the sweep, and with ``peers`` the
    peer rows), written to ``out`` and ``plot`` when given. ``shapes``: instead of the size grid, ``"models"``
    (each op's model activations, conformance.tools.shapes) or a list of BenchShape. ``cuda_copy``: a CUDA
    device-to-device copy joins best_copy where torch has CUDA. ``max_calls``: time only the first that many calls
    of the fixed work list (said in the result as ``truncated``): a budget counted in calls, so which rows a run has
    does not depend on the machine's speed. Raises NothingToBench when no call is left."""
    device = kernels[0].device
    timer = Timer(device, reps=reps, warmup_seconds=warmup_seconds)
    cuda, cuda_note = cuda_copy_baseline(warmup_seconds, reps) if cuda_copy else (None, "CUDA copy not asked for")
    baselines = Baselines(device, timer, cuda)
    limit = min(device.profile.limits["maxStorageBufferBindingSize"], device.profile.limits["maxBufferSize"])
    sizes = [n for n in SIZES if min_elements <= n <= max_elements and (n + 1) * 4 <= limit]
    dtypes = ["float32"] + (["float16"] if "shader-f16" in device.profile.features else [])
    if shapes is None:
        work = [(k, args, None) for k in kernels for args, _ in bench_calls(k, sizes, dtypes)]
    else:
        sizes = []  # no sweep: it runs at the grid's largest size
        work = [
            (k, args, source)
            for k in kernels
            for args, source in shape_calls(k, shapes, dtypes)
            if all(a is None or math.prod(a[0]) * 4 <= limit for a in args.values())
        ]
    if not any(_accepts(k, args) for k, args, _ in work):
        raise NothingToBench("bench: " + nothing_to_bench(kernels, min_elements, max_elements, shapes, limit))
    rows, skipped, failed = [], 0, []
    progress = Progress(f"bench {device.webgpu}", min(len(work), max_calls if max_calls is not None else len(work)))
    for i, (kernel, args, source) in enumerate(work, 1):
        if max_calls is not None and i > max_calls:
            skipped += 1
            continue
        try:
            row = measure_call(kernel, args, timer, baselines)
        except ConformanceError as exc:  # a kernel that fails at this size is a finding, not the end of the run
            failed.append(
                f"{kernel.package.name} {_call_text(args)}: {str(exc).splitlines()[0]}"
                + "".join(f" / {line.strip()}" for line in str(exc).splitlines()[1:] if "error" in line)
            )
            progress.step(f"{kernel.package.name} {_call_text(args)}", failed=True)
            continue
        progress.step(f"{kernel.package.name} {_call_text(args)}")
        if row:
            row.source = source
            rows.append(row)
    best = sweep_workgroups(kernels, timer, baselines, sizes[-1], dtypes) if sweep and sizes else []
    adapter = device.summary.get("adapter")
    result = {
        "device": device.summary,
        "webgpu": device.webgpu,
        "timing": timer.copies_timed
        and "timestamp"
        or ("timestamp (kernels), wall clock (copy_buffer_to_buffer)" if timer.passes_timed else "wall clock"),
        "timestamp_period_ns": timer.period,
        "best_copy": {
            "candidates": ["copy shader vec4<u32>"]
            + [f"copy shader {p}x vec4<u32>" for p in WIDE_COPIES]
            + [f"{COPY2} (kernels reading two tensors of their size)", "copy_buffer_to_buffer"]
            + ([CUDA_COPY] if cuda else []),
            "cuda_note": cuda_note,
            "spec_peak_gbps": spec_peak_gbps(adapter),
            "by_size": best_copy_by_size(rows),
        },
        "rows": [row_dict(r) for r in rows],
        "bench_errors": [r.error for r in rows if r.error],
        "tuning": best,
    }
    if skipped:
        result["truncated"] = f"{skipped} of {len(work)} calls not timed: past --max-calls {max_calls}"
    if failed:
        result["failed_calls"] = failed
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


def _accepts(kernel: Kernel, args) -> bool:
    try:
        kernel.plan(**args)
    except ContractError:
        return False
    return True


def row_dict(r: Row) -> dict:
    return asdict(r) | {
        "vs_copy_shader": r.vs_shader,
        "vs_copy_buffer": r.vs_buffer,
        "best_copy_ratio": r.best_copy_ratio,
    }


def best_copy_by_size(rows: list[Row]) -> list[dict]:
    """Per bytes copied: the fastest copy of any row of that size (each row's copies ran on its own buffers)."""
    out: dict[int, dict] = {}
    for r in rows:
        key = math.prod(r.shape) * (2 if r.dtype == "float16" else 4)
        entry = out.setdefault(key, {"input_bytes": key, "copies_gbps": {}})
        for name, gbps in (r.copies_gbps or {}).items():
            entry["copies_gbps"][name] = max(gbps, entry["copies_gbps"].get(name, 0.0))
    for entry in out.values():
        best = max(entry["copies_gbps"], key=entry["copies_gbps"].get)
        entry["best"], entry["best_gbps"] = best, entry["copies_gbps"][best]
    return [out[k] for k in sorted(out)]


def run_implementations(webgpus: list[str], open_kernels, *, out: Path | None, plot: Path | None, **options) -> dict:
    """``run_bench`` on each WebGPU implementation in turn (``open_kernels(webgpu)`` gives its kernels), one JSON:
    ``runs`` (one result per implementation, or its error), every row in ``rows`` (each with its ``webgpu``),
    and ``side_by_side``: the same call on each implementation. Written after every implementation."""
    merged: dict = {"runs": [], "rows": [], "bench_errors": [], "implementations": {}}
    for i, webgpu in enumerate(webgpus):
        try:
            kernels = open_kernels(webgpu)
            # peers (torch, ONNX Runtime) do not depend on our implementation: timed once, against the first
            result = run_bench(kernels, out=None, plot=None, **(options | {"peers": options.get("peers") and i == 0}))
        except NothingToBench:  # the arguments' fault, the same on every implementation
            raise
        except Exception as exc:  # an implementation that does not open or run here: said, the others still run
            merged["implementations"][webgpu] = f"not benched: {type(exc).__name__}: {exc}"
            continue
        merged["implementations"][webgpu] = "benched"
        merged["runs"].append(result)
        merged["rows"] += result["rows"]
        merged["bench_errors"] += [f"{webgpu}: {e}" for e in result["bench_errors"]]
        merged.setdefault("device", result["device"])
        merged.setdefault("timing", result["timing"])
        merged["side_by_side"] = side_by_side(merged["rows"])
        if out:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(merged, indent=2) + "\n")
    merged["side_by_side"] = side_by_side(merged["rows"])
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(merged, indent=2) + "\n")
    if plot and merged["rows"]:
        plot_rows(merged["rows"], plot, (merged.get("device") or {}).get("adapter", "device"))
    return merged


def _call_key(r: dict) -> tuple:
    return r["package"], r.get("version", 1), r["variant"], r["dtype"], tuple(r["shape"]), r["bias"]


def side_by_side(rows: list[dict]) -> list[dict]:
    """One entry per call benched on more than one implementation: each one's GB/s and best_copy ratio, and
    GB/s of each over the first's (Dawn/Tint over wgpu/naga when both ran)."""
    calls: dict[tuple, dict] = {}
    for r in rows:
        calls.setdefault(_call_key(r), {})[r.get("webgpu", "wgpu")] = r
    out = []
    for (package, version, variant, dtype, shape, bias), by in calls.items():
        if len(by) < 2:
            continue
        names = list(by)
        first = by[names[0]]
        out.append(
            {
                "package": package,
                "version": version,
                "variant": variant,
                "dtype": dtype,
                "shape": list(shape),
                "bias": bias,
                "gbps": {n: by[n]["gbps"] for n in names},
                "best_copy_ratio": {n: by[n]["best_copy_ratio"] for n in names},
                "vs_copy_shader": {n: by[n]["vs_copy_shader"] for n in names},
                f"gbps_over_{names[0]}": {n: by[n]["gbps"] / first["gbps"] for n in names[1:]},
            }
        )
    return out


def sweep_workgroups(kernels, timer, baselines, size, dtypes) -> list[dict]:
    """Best WORKGROUP_SIZE per (package, dtype, variant) at ``size`` elements."""
    cap = min(
        kernels[0].device.profile.limits["maxComputeInvocationsPerWorkgroup"],
        kernels[0].device.profile.limits["maxComputeWorkgroupSizeX"],
    )
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
                best.append(
                    {
                        "package": kernel.manifest.op_id,
                        "version": kernel.manifest.version,
                        "dtype": top.dtype,
                        "variant": top.variant,
                        "WORKGROUP_SIZE": pick,
                        "gbps": top.gbps,
                        "sweep": {wg: r.gbps for wg, r in results.items()},
                    }
                )
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
    """The rows, one line each; a bench error replaces the row's figures (it is not a result)."""
    runs = result.get("runs") or [result]
    lines = []
    for run in runs:
        bc = run.get("best_copy") or {}
        peak = bc.get("spec_peak_gbps")
        lines.append(
            f"device: {run['device'].get('adapter')} ({run['device'].get('backend')}) through "
            f"{run.get('webgpu', 'wgpu')}; timing: {run['timing']}"
            + (f"; memory spec peak {peak:.0f} GB/s" if peak else "")
            + (f"; {bc['cuda_note']}" if bc.get("cuda_note") else "")
        )
        for entry in bc.get("by_size", []):
            copies = ", ".join(f"{k} {v:.1f}" for k, v in entry["copies_gbps"].items())
            lines.append(
                f"  best copy at {entry['input_bytes']} B: {entry['best']} {entry['best_gbps']:.1f} GB/s"
                + (f" ({entry['best_gbps'] / peak:.3f} of spec peak)" if peak else "")
                + f" [{copies}]"
            )
        if run.get("truncated"):
            lines.append(f"  TRUNCATED: {run['truncated']}")
        lines += [f"  FAILED CALL: {f}" for f in run.get("failed_calls", [])]
    lines.append(
        f"{'package':<24}{'v':>2} {'webgpu':<9}{'variant':<20}{'dtype':<9}{'elements':>11}{'wg':>6}"
        f"{'GB/s':>9}{'spread':>8}{'/best-copy':>12}{'/copy-shader':>14}{'/copy-buffer':>14}"
    )
    for r in result["rows"]:
        n = int(np.prod(r["shape"]))
        head = (
            f"{r['package']:<24}{r.get('version', 1):>2} {r.get('webgpu', 'wgpu'):<9}{r['variant']:<20}"
            f"{r['dtype']:<9}{n:>11}{r['workgroup_size']:>6}"
        )
        if r.get("error"):
            lines.append(head + f"  BENCH ERROR, not a result: {r['error']}")
            continue
        lines.append(
            head + f"{r['gbps']:>9.1f}{r['spread']:>8.3f}{r.get('best_copy_ratio', math.nan):>12.3f}"
            f"{r['vs_copy_shader']:>14.3f}{r['vs_copy_buffer']:>14.3f}"
            + ("  unsettled: GPU speed still changing" if r.get("settled") is False else "")
            + (f"  {list(r['shape'])} {r['source']}" if r.get("source") else "")
        )
    for t in result.get("tuning", []):
        lines.append(
            f"tuning: {t['package']} v{t.get('version', 1)} {t['dtype']} {t['variant']}: "
            f"WORKGROUP_SIZE {t['WORKGROUP_SIZE']} "
            f"({t['gbps']:.1f} GB/s; sweep {', '.join(f'{k}:{v:.0f}' for k, v in t['sweep'].items())})"
        )
    for webgpu, state in (result.get("implementations") or {}).items():
        if state != "benched":
            lines.append(f"{webgpu}: {state}")
    if result.get("side_by_side"):
        lines.append(format_side_by_side(result["side_by_side"]))
    if result.get("bench_errors"):
        lines.append(
            f"{len(result['bench_errors'])} BENCH ERROR(S): a kernel beat the best copy; those rows are "
            f"not results (see above)"
        )
    return "\n".join(lines)


def format_side_by_side(entries: list[dict]) -> str:
    names = list(entries[0]["gbps"])
    ratio_key = next(k for k in entries[0] if k.startswith("gbps_over_"))
    lines = [
        f"side by side ({', '.join(names)}): GB/s, ratio to each one's best copy, GB/s over {names[0]}",
        f"{'package':<24}{'v':>2} {'variant':<20}{'dtype':<9}{'elements':>11}"
        + "".join(f"{n + ' GB/s':>13}{'/best':>7}" for n in names)
        + "".join(f"{n + '/' + names[0]:>14}" for n in names[1:]),
    ]
    for e in entries:
        lines.append(
            f"{e['package']:<24}{e['version']:>2} {e['variant']:<20}{e['dtype']:<9}"
            f"{int(np.prod(e['shape'])):>11}"
            + "".join(f"{e['gbps'][n]:>13.1f}{e['best_copy_ratio'][n]:>7.3f}" for n in names)
            + "".join(f"{e[ratio_key][n]:>14.3f}" for n in names[1:])
        )
    return "\n".join(lines)


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend; MissingDependency (one line: what to install) without it."""
    try:
        import matplotlib  # optional (the bench extra): only plots need it

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # (see above)
    except ImportError:
        raise MissingDependency(
            f"plotting needs matplotlib, which is not installed: {install_hint('matplotlib')}"
        ) from None
    return plt


def row_package(row: dict) -> str:
    """The row's package as plots name it: the op name, with @version from version 2 on (``Gelu@2``)."""
    return row["package"].split(".")[-1] + (f"@{row['version']}" if row.get("version", 1) != 1 else "")


def plot_title(rows: list[dict], adapter: str) -> str:
    """Names the packages plotted and the device."""
    names = sorted({row_package(r) for r in rows})
    return f"{', '.join(names) or 'no packages'} vs copy baselines: {adapter}"


def plot_rows(rows: list[dict], path: Path, title: str) -> None:
    """Bandwidth against bytes moved, one line per package/variant/dtype, copy baselines dashed."""
    plt = pyplot()
    fig, (ax, ratio_ax) = plt.subplots(2, 1, figsize=(9, 9), sharex=True)
    series: dict = {}
    for r in rows:
        series.setdefault((row_package(r), r["variant"], r["dtype"], r["bias"]), []).append(r)
    for (pkg, variant, dtype, _), rs in sorted(series.items()):
        rs.sort(key=lambda r: r["bytes_moved"])
        label = f"{pkg} {variant} {dtype}"
        ax.plot([r["bytes_moved"] for r in rs], [r["gbps"] for r in rs], marker="o", ms=3, label=label)
        ratio_ax.plot([r["bytes_moved"] for r in rs], [r["vs_copy_shader"] for r in rs], marker="o", ms=3, label=label)
    pts = sorted({(r["bytes_moved"], r["copy_shader_gbps"]) for r in rows})
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "k.", ms=4, label="vec4 copy shader (same buffers)")
    ratio_ax.axhline(1.0, color="k", ls="--", lw=0.8)
    ratio_ax.axhline(0.9, color="k", ls=":", lw=0.8)
    ax.set_xscale("log")
    ratio_ax.set_xlabel("bytes moved per call")
    ax.set_ylabel("GB/s")
    ratio_ax.set_ylabel("kernel / copy shader on the same buffers")
    ax.set_title(plot_title(rows, title))
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
