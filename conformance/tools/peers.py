"""Peers timed in the same run as the bench: PyTorch's GELU on CUDA (with a CUDA device-to-device copy), and
ONNX Runtime's WebGPU FastGelu/Gelu.

Each peer is reported as its kernel time divided by this project's kernel time
for the same package, dtype and shape (above 1: ours is faster).  A peer whose
runtime is missing (torch without CUDA, onnxruntime without a WebGPU execution
provider that starts here) gives a note row saying why, never an exception.
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np

from conformance.impls.onnxruntime.native import OrtWebGpu, ort_ops, session_key, short_error
from conformance.ops.registry import find

#: How the ONNX Runtime WebGPU peer is timed (see ``time_bound_runs``).
ORT_METHOD = "wall clock, device-resident IOBinding, fence read-back subtracted"


def selected_rows(result: dict, max_elements: int):
    """The bench rows every peer times: every model shape (``source``), and of the size grid those of at least
    1 Mi elements, at most ``max_elements``, a multiple of 1024."""
    for row in result["rows"]:
        n = math.prod(row["shape"])
        if row.get("source") or ((1 << 20) <= n <= max_elements and n % 1024 == 0):
            yield row


def peer_row(row: dict, peer: str, seconds: float, **extra) -> dict:
    """The report row for one peer timed against one bench row; ``extra`` holds the peer's own figures."""
    return {
        "package": row["package"],
        "variant": row["variant"],
        "dtype": row["dtype"],
        "elements": math.prod(row["shape"]),
        "peer": peer,
        "peer_seconds": seconds,
        "ours_seconds": row["seconds"],
        "time_ratio_peer_over_ours": seconds / row["seconds"],
        "ours_gbps": row["gbps"],
        **extra,
    }


def note(text: str) -> dict:
    return {"note": text}


# -- torch (CUDA) ------------------------------------------------------------------------------------------


def _cuda_time(fn, reps: int = 20, warmup: int = 3) -> float:
    import torch  # optional peer: loaded on use

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(samples)


def cuda_copy_baseline(warmup_seconds: float = 1.0, reps: int = 20):
    """(function, note): the function gives (GB/s, spread) of a CUDA device-to-device copy of ``nbytes`` bytes
    (``nbytes / 2`` read and as many written, like the bench's copies), timed with CUDA events after
    ``warmup_seconds`` of sustained copying (the clocks, see conformance.gpu.timing.Timer), memoised per size;
    None and the reason where torch or a CUDA device is missing."""
    try:
        import torch  # optional baseline: loaded on use
    except ImportError:
        return None, "torch is not installed: no CUDA copy in best_copy"
    if not torch.cuda.is_available():
        return None, "torch has no CUDA device: no CUDA copy in best_copy"
    cache: dict[int, tuple[float, float]] = {}

    def measure(nbytes: int) -> tuple[float, float]:
        half = max(16, nbytes // 2 // 16 * 16)
        if half not in cache:
            src = torch.empty(half, dtype=torch.uint8, device="cuda").random_(0, 255)
            dst = torch.empty_like(src)
            start = time.perf_counter()
            while time.perf_counter() - start < warmup_seconds:
                for _ in range(10):
                    dst.copy_(src)
                torch.cuda.synchronize()
            samples = []
            for _ in range(reps):
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                begin.record()
                dst.copy_(src)
                end.record()
                end.synchronize()
                samples.append(begin.elapsed_time(end) * 1e-3)
            median = statistics.median(samples)
            q = np.percentile(samples, [25, 75])
            cache[half] = (2 * half / median / 1e9, float((q[1] - q[0]) / median))
            del src, dst
            torch.cuda.empty_cache()
        return cache[half]

    return measure, None


def run_torch_peers(result: dict, max_elements: int) -> list[dict]:
    try:
        import torch  # optional peer: loaded on use
    except ImportError:
        return [note("torch is not installed: no torch peers timed")]
    if not torch.cuda.is_available():
        return [note("torch has no CUDA device: no torch peers timed")]
    out = []
    for row in selected_rows(result, max_elements):
        dtype = {"float32": torch.float32, "float16": torch.float16}[row["dtype"]]
        record = find(row["package"])  # the op record's PyTorch peer (None: no peer)
        if record is None or record.torch_peer is None:
            continue
        tensors = {r: torch.randn(s, device="cuda", dtype=dtype) for r, s in row_inputs(row).items()}
        x = tensors[record.roles[0]]
        fn, name = record.torch_peer(tensors)
        copy = _cuda_time(lambda: x.clone())  # noqa: B023 (called within this iteration, never after it)
        t = _cuda_time(fn)
        copy_gbps = 2 * x.numel() * x.element_size() / copy / 1e9
        out.append(peer_row(row, name, t, cuda_copy_gbps=copy_gbps, ours_vs_cuda_copy=row["gbps"] / copy_gbps))
    return out


# -- ONNX Runtime (WebGPU execution provider) --------------------------------------------------------------


def reps_for(per_run_seconds: float, target_seconds: float = 0.2, max_reps: int = 1 << 16) -> int:
    """Runs in one timed batch so that it lasts at least ``target_seconds`` (``max_reps`` when unknown)."""
    if not per_run_seconds > 0 or math.isinf(per_run_seconds):
        return max_reps
    return max(1, min(max_reps, math.ceil(target_seconds / per_run_seconds)))


def per_run_seconds(batch_seconds: float, readback_seconds: float, reps: int) -> float:
    """One run's time from a batch of ``reps`` runs closed by one read-back: the read-back is only the fence,
    so its separately measured time comes off.  NaN when the batch is no longer than the read-back (noise)."""
    if batch_seconds <= readback_seconds:
        return math.nan
    return (batch_seconds - readback_seconds) / reps


def time_bound_runs(
    run,
    fence,
    *,
    warmup: int = 3,
    readback_reps: int = 5,
    target_seconds: float = 0.2,
    max_reps: int = 1 << 16,
    clock=time.perf_counter,
) -> tuple[float, int, float]:
    """(seconds per run, runs timed, read-back seconds) for a non-blocking ``run`` and a blocking ``fence``.

    ``run`` only queues work (ORT's ``run_with_iobinding`` on WebGPU flushes and returns; its
    ``synchronize_outputs`` is a no-op), so a single run cannot be timed.  ``fence`` (a read-back of the
    output) is the one call that waits for the queue; a batch of K runs closed by one fence is timed, and
    one fence alone, measured right after (median of ``readback_reps``), is subtracted.  K is estimated
    from probe batches (10, 100, ... runs until the probe's net time is a tenth of the target) so that the
    timed batch lasts at least ``target_seconds``.
    """

    def fence_alone() -> float:
        samples = []
        for _ in range(readback_reps):
            start = clock()
            fence()
            samples.append(clock() - start)
        return statistics.median(samples)

    def batch(reps: int) -> float:
        start = clock()
        for _ in range(reps):
            run()
        fence()
        return clock() - start

    for _ in range(warmup):
        run()
        fence()
    readback = fence_alone()
    reps = min(10, max_reps)
    while True:
        per_run = per_run_seconds(batch(reps), readback, reps)
        if reps >= max_reps or per_run * reps >= target_seconds / 10:  # NaN compares False: probe again
            break
        reps = min(reps * 10, max_reps)
    reps = reps_for(per_run, target_seconds, max_reps)
    total = batch(reps)
    readback = fence_alone()
    return per_run_seconds(total, readback, reps), reps, readback


def ort_peer_name(op: str, roles) -> str:
    return f"onnxruntime-webgpu {op}({', '.join(roles)})"


def row_inputs(row: dict) -> dict[str, list[int]]:
    """role -> shape of every input a bench row fed (rows written before they carried ``inputs``: X, bias)."""
    if row.get("inputs"):
        return dict(row["inputs"])
    return {"X": row["shape"], **({"bias": row["shape"][-1:]} if row["bias"] else {})}


def run_ort_webgpu_peers(result: dict, max_elements: int, *, target_seconds: float = 0.2) -> list[dict]:
    """ONNX Runtime's WebGPU kernels of the ops whose records map to ONNX, as one-node models, on the rows
    ``selected_rows`` picks, fed every input the bench row fed.

    Python cannot create a WebGPU-resident OrtValue, but an IOBinding can: the inputs are uploaded once
    at bind time (``bind_cpu_input``) and the output stays on the GPU (``bind_output(.., "webgpu", 0)``),
    so steady-state runs move no data over the bus; see ``time_bound_runs`` for why they are timed in
    batches closed by a read-back.  The fence is not the output's own read-back (1 GiB at 256 Mi f32,
    whose tens of milliseconds of noise swamped the runs it was subtracted from: ratios of 0.6 and 5.6
    on the H200) but a run of a 4-element Gelu session with CPU output: sessions share ORT's WebGPU
    device and its queue runs in order, so that read-back waits for every queued run.  Sessions come
    from ``OrtWebGpu`` (one per op, dtype and bias present; it refuses a session that does not run
    on the WebGPU provider).  Rows carry ``method``.
    """

    OPS = ort_ops()  # the records with an ORT mapping
    rows = [row for row in selected_rows(result, max_elements) if row["package"] in OPS]
    if not rows:
        return []
    impl = OrtWebGpu()
    reason = impl.available()  # not installed, no WebGPU EP in this build, or Dawn rejects the adapter
    if reason:
        return [note(f"{reason}: no onnxruntime-webgpu peers timed")]
    try:  # the fence: a CPU-output run of a tiny session of the first row's op on the same device (see below)
        first = rows[0]
        fence_session = impl.session_for(session_key(first["package"], {r: "float32" for r in row_inputs(first)}))
    except Exception as exc:
        return [note(f"onnxruntime-webgpu: no fence session: {short_error(exc)}: no onnxruntime-webgpu peers timed")]
    tiny = {r: np.ones(4, np.float32) for r in row_inputs(first)}  # every role as one row of 4

    def fence():
        fence_session.run(None, tiny)

    rng = np.random.default_rng(0)
    out = []
    for row in rows:
        op, n, inputs = OPS[row["package"]], math.prod(row["shape"]), row_inputs(row)
        name = ort_peer_name(op, inputs)
        binding = None
        try:
            sess = impl.session_for(session_key(row["package"], {r: row["dtype"] for r in inputs}))  # cached per key
            binding = sess.io_binding()
            for role, shape in inputs.items():
                binding.bind_cpu_input(role, rng.standard_normal(shape, np.float32).astype(row["dtype"]))
            for output in sess.get_outputs():
                binding.bind_output(output.name, "webgpu", 0)
            seconds, reps, readback = time_bound_runs(
                lambda: sess.run_with_iobinding(binding),  # noqa: B023 (called within this iteration, never after it)
                fence,
                target_seconds=target_seconds,
            )
        except Exception as exc:  # a Rejected session, or ORT failing at this size: said, not raised
            out.append(note(f"{name} {row['dtype']} {n} elements: not timed: {short_error(exc)}"))
            continue
        finally:
            binding = None  # frees this row's GPU output before the next row binds its own
        if math.isnan(seconds):
            out.append(
                note(
                    f"{name} {row['dtype']} {n} elements: not timed: the batch of {reps} runs was no "
                    f"longer than one read-back ({readback:.3g} s)"
                )
            )
            continue
        out.append(peer_row(row, name, seconds, method=ORT_METHOD, reps=reps, readback_seconds=readback))
    return out


# -- all peers ---------------------------------------------------------------------------------------------


def run_peers(result: dict, max_elements: int) -> list[dict]:
    """Every peer's rows (and notes for the peers that could not run here)."""
    return run_torch_peers(result, max_elements) + run_ort_webgpu_peers(result, max_elements)


def format_peers(rows: list[dict]) -> str:
    lines = ["peers (same run): time ratio peer/ours (>1: ours faster); torch: ours vs CUDA copy bandwidth"]
    width = max([26] + [len(r["peer"]) + 1 for r in rows if "peer" in r])
    for r in rows:
        if "note" in r:
            lines.append(r["note"])
            continue
        line = (
            f"{r['package']:<24}{r['variant']:<16}{r['dtype']:<9}{r['elements']:>11} {r['peer']:<{width}}"
            f"ratio {r['time_ratio_peer_over_ours']:.3f}"
        )
        if "cuda_copy_gbps" in r:
            line += f"  CUDA copy {r['cuda_copy_gbps']:.0f} GB/s  ours/CUDA-copy {r['ours_vs_cuda_copy']:.3f}"
        if "method" in r:
            line += f"  ({r['method']})"
        lines.append(line)
    return "\n".join(lines)
