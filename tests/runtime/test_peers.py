"""Bench peers, host side: the batch timing arithmetic, the report rows, and the notes when a peer cannot run.

No GPU here: the timing loop runs against a simulated asynchronous queue on a fake clock, and the ONNX
Runtime wiring against a fake session; the note tests use the onnxruntime installed on this machine.
"""

import math
import sys
import types

import pytest

from conformance.impls.onnxruntime import native as ort_impl
from conformance.tools import peers

MI = 1 << 20


def bench_row(
    package="com.microsoft.FastGelu", shape=(1024, 1024), dtype="float32", bias=True, seconds=1e-3, variant="vec4_bias"
):
    return {
        "package": package,
        "variant": variant,
        "dtype": dtype,
        "shape": list(shape),
        "bias": bias,
        "seconds": seconds,
        "gbps": 12.5,
    }


class AsyncQueue:
    """A GPU queue on a fake clock: ``run`` costs ``submit`` of host time and queues ``kernel`` of GPU time;
    ``fence`` waits for the queue, then costs ``readback`` (what ORT's run_with_iobinding and the peer's fence,
    a CPU-output run of a tiny session on the same device, do on WebGPU)."""

    def __init__(self, kernel, readback, submit=0.0):
        self.kernel, self.readback, self.submit = kernel, readback, submit
        self.now = self.gpu_free = 0.0
        self.runs = self.fences = 0

    def clock(self):
        return self.now

    def run(self):
        self.now += self.submit
        self.gpu_free = max(self.gpu_free, self.now) + self.kernel
        self.runs += 1

    def fence(self):
        self.now = max(self.now, self.gpu_free) + self.readback
        self.fences += 1


# -- timing arithmetic ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("per_run, expected", [(2**-10, 205), (2**-3, 2), (1.0, 1), (2**-30, 1 << 16)])
def test_reps_for_makes_the_batch_last_the_target_within_bounds(per_run, expected):
    reps = peers.reps_for(per_run, target_seconds=0.2, max_reps=1 << 16)
    assert reps == expected
    assert reps * per_run >= 0.2 or reps == 1 << 16


@pytest.mark.parametrize("per_run", [0.0, -1.0, math.nan, math.inf])
def test_reps_for_an_unknown_run_time_takes_the_most_runs(per_run):
    assert peers.reps_for(per_run, max_reps=4096) == 4096


def test_per_run_seconds_subtracts_one_read_back_and_divides():
    assert peers.per_run_seconds(0.25, 0.05, 100) == pytest.approx(0.002)


@pytest.mark.parametrize("batch", [0.05, 0.01])
def test_per_run_seconds_is_nan_when_the_batch_is_no_longer_than_the_read_back(batch):
    assert math.isnan(peers.per_run_seconds(batch, 0.05, 100))


@pytest.mark.parametrize(
    "kernel, readback, submit, expected, rel",
    [
        (2**-10, 2**-6, 0.0, 2**-10, 1e-12),  # GPU-bound: the read-back fence comes off exactly
        (2**-16, 2**-7, 0.0, 2**-16, 1e-12),  # the read-back dwarfs one run: probes grow until it does not
        (2**-16, 2**-8, 2**-14, 2**-14, 1e-3),  # host-bound: submitting is what the caller really pays
    ],
)
def test_time_bound_runs_recovers_the_per_run_time_of_a_non_blocking_queue(kernel, readback, submit, expected, rel):
    q = AsyncQueue(kernel, readback, submit)
    seconds, reps, measured_readback = peers.time_bound_runs(q.run, q.fence, target_seconds=0.25, clock=q.clock)
    assert seconds == pytest.approx(expected, rel=rel)
    assert measured_readback == pytest.approx(readback)
    assert reps * seconds >= 0.25 * (1 - rel) and reps == pytest.approx(peers.reps_for(expected, 0.25), rel=rel)


def test_time_bound_runs_warms_up_with_read_backs_and_closes_the_timed_batch_with_one():
    q = AsyncQueue(2**-10, 2**-6)
    _, reps, _ = peers.time_bound_runs(q.run, q.fence, warmup=3, readback_reps=5, target_seconds=0.25, clock=q.clock)
    probes = 10 + 100  # 10 runs net less than a tenth of the target, 100 runs enough
    assert q.runs == 3 + probes + reps
    assert q.fences == 3 + 5 + 2 + 1 + 5  # warm-up, read-back alone, two probes, the timed batch, read-back again


# -- rows ------------------------------------------------------------------------------------------------


def test_selected_rows_are_the_large_multiples_of_1024_up_to_the_limit():
    rows = [bench_row(shape=s) for s in [(1024, 1023), (512, 1024), (1024, 1024), (1025, 1024), (4096, 1024)]]
    chosen = list(peers.selected_rows({"rows": rows}, max_elements=2 * MI))
    assert [math.prod(r["shape"]) for r in chosen] == [MI, 1025 * 1024]


def test_peer_row_reports_the_time_ratio_peer_over_ours_and_keeps_the_extras():
    row = peers.peer_row(
        bench_row(seconds=2e-3), "onnxruntime-webgpu FastGelu(x, bias)", 3e-3, method=peers.ORT_METHOD, reps=67
    )
    assert row == {
        "package": "com.microsoft.FastGelu",
        "variant": "vec4_bias",
        "dtype": "float32",
        "elements": MI,
        "peer": "onnxruntime-webgpu FastGelu(x, bias)",
        "peer_seconds": 3e-3,
        "ours_seconds": 2e-3,
        "time_ratio_peer_over_ours": pytest.approx(1.5),
        "ours_gbps": 12.5,
        "method": peers.ORT_METHOD,
        "reps": 67,
    }


def test_format_peers_prints_torch_rows_ort_rows_and_notes():
    torch_row = peers.peer_row(
        bench_row(), "torch gelu(x + b, tanh)", 2e-3, cuda_copy_gbps=4000.0, ours_vs_cuda_copy=0.8
    )
    ort_row = peers.peer_row(bench_row(), peers.ort_peer_name("FastGelu", ["X", "bias"]), 5e-4, method=peers.ORT_METHOD)
    text = peers.format_peers([torch_row, ort_row, peers.note("torch is not installed: no torch peers timed")])
    lines = text.splitlines()
    assert "ratio 2.000  CUDA copy 4000 GB/s  ours/CUDA-copy 0.800" in lines[1]
    assert "onnxruntime-webgpu FastGelu(X, bias)" in lines[2]
    assert lines[2].endswith(f"ratio 0.500  ({peers.ORT_METHOD})")
    assert lines[3] == "torch is not installed: no torch peers timed"


# -- ONNX Runtime peer: notes and wiring -------------------------------------------------------------------


def _ort_or_none():
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime


def test_ort_peers_time_nothing_and_import_nothing_when_no_row_is_selected(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert peers.run_ort_webgpu_peers({"rows": [bench_row(shape=(512, 1024))]}, max_elements=MI) == []


def test_ort_peers_say_when_onnxruntime_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    rows = peers.run_ort_webgpu_peers({"rows": [bench_row()]}, max_elements=MI)
    assert len(rows) == 1 and "onnxruntime is not installed" in rows[0]["note"]
    assert rows[0]["note"].endswith("no onnxruntime-webgpu peers timed")


def test_ort_peers_on_this_machine_give_a_note_or_timed_rows_never_an_exception():
    """The installed onnxruntime as it is: CPU-only (or Dawn refusing the adapter) gives a note."""
    reason = ort_impl.OrtWebGpu().available()
    rows = peers.run_ort_webgpu_peers(
        {"rows": [bench_row(), bench_row("com.microsoft.Gelu", bias=False)]}, max_elements=MI, target_seconds=0.01
    )
    if reason:
        assert rows == [{"note": f"{reason}: no onnxruntime-webgpu peers timed"}]
        assert "WebGpuExecutionProvider" in reason or "not installed" in reason
    else:  # a GPU that Dawn accepts: real timings
        assert [r.get("peer") for r in rows] == ["onnxruntime-webgpu FastGelu(x, bias)", "onnxruntime-webgpu Gelu(x)"]
        assert all(r["method"] == peers.ORT_METHOD and r["peer_seconds"] > 0 for r in rows)


def test_ort_peers_say_when_the_webgpu_provider_is_listed_but_does_not_start(monkeypatch):
    ort = _ort_or_none()
    if ort is None or "WebGpuExecutionProvider" in ort.get_available_providers():
        pytest.skip("needs an onnxruntime without the WebGPU execution provider")
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["WebGpuExecutionProvider", "CPUExecutionProvider"])
    with pytest.warns(UserWarning, match="WebGpuExecutionProvider"):
        rows = peers.run_ort_webgpu_peers({"rows": [bench_row()]}, max_elements=MI)
    assert len(rows) == 1
    assert "WebGpuExecutionProvider could not start a session here" in rows[0]["note"]


class FakeBinding:
    def __init__(self, log):
        self.log = log

    def bind_cpu_input(self, name, array):
        self.log.append(("input", name, array.shape, array.dtype.name))

    def bind_output(self, name, device, device_id):
        self.log.append(("output", name, device, device_id))

    def copy_outputs_to_cpu(self):
        self.log.append(("read-back",))


class FakeSession:
    def __init__(self, model, log):
        self.inputs = [i.name for i in model.graph.input]
        self.op = model.graph.node[0].op_type
        self.model = model
        self.log = log

    def get_providers(self):
        return ["WebGpuExecutionProvider", "CPUExecutionProvider"]

    def io_binding(self):
        return FakeBinding(self.log)

    def run_with_iobinding(self, binding):
        self.log.append(("run", self.op))

    def get_outputs(self):
        return [types.SimpleNamespace(name=o.name) for o in self.model.graph.output]

    def run(self, outputs, feeds):
        self.log.append(("fence", self.op, feeds[self.inputs[0]].shape))


def test_ort_peers_bind_device_resident_once_per_row_and_build_one_session_per_op_dtype_bias(monkeypatch):
    pytest.importorskip("onnx")
    built, log = [], []

    def fake_session(model, providers, config):
        assert providers == ["WebGpuExecutionProvider"] and config == {"session.disable_cpu_ep_fallback": "1"}
        built.append(model)
        return FakeSession(model, log)

    def fake_timing(run, fence, *, target_seconds):
        run()
        fence()
        return 5e-4, 400, 2e-3

    monkeypatch.setattr(ort_impl.OrtWebGpu, "available", lambda self: None)
    monkeypatch.setattr(ort_impl, "session", fake_session)
    monkeypatch.setattr(peers, "time_bound_runs", fake_timing)
    rows = [
        bench_row(shape=(1024, 1024)),
        bench_row(shape=(2048, 1024)),
        bench_row(dtype="float16"),
        bench_row(bias=False),
        bench_row("com.microsoft.Gelu", bias=False, seconds=2.5e-4),
        bench_row("com.microsoft.Unknown"),
    ]
    out = peers.run_ort_webgpu_peers({"rows": rows}, max_elements=4 * MI)
    # the fence is the first row's op in f32 (that row and the next, f32 with bias too, reuse it)
    assert [(m.graph.node[0].op_type, len(m.graph.input)) for m in built] == [
        ("FastGelu", 2),
        ("FastGelu", 2),
        ("FastGelu", 1),
        ("Gelu", 1),
    ]
    assert [r["peer"] for r in out] == ["onnxruntime-webgpu FastGelu(X, bias)"] * 3 + [
        "onnxruntime-webgpu FastGelu(X)",
        "onnxruntime-webgpu Gelu(X)",
    ]
    assert out[-1]["time_ratio_peer_over_ours"] == pytest.approx(2.0)
    assert all(r["method"] == peers.ORT_METHOD and r["reps"] == 400 and r["readback_seconds"] == 2e-3 for r in out)
    assert log[:5] == [
        ("input", "X", (1024, 1024), "float32"),
        ("input", "bias", (1024,), "float32"),
        ("output", "Y", "webgpu", 0),
        ("run", "FastGelu"),
        ("fence", "FastGelu", (4,)),
    ]
    assert ("read-back",) not in log  # the output itself never crosses the bus
    assert ("input", "X", (1024, 1024), "float16") in log


def test_ort_peers_note_a_row_that_fails_and_go_on(monkeypatch):
    pytest.importorskip("onnx")
    log = []

    def session_failing_for_fast_gelu(model, providers, config):
        if model.graph.node[0].op_type == "FastGelu":
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : out of memory")
        return FakeSession(model, log)

    monkeypatch.setattr(ort_impl.OrtWebGpu, "available", lambda self: None)
    monkeypatch.setattr(ort_impl, "session", session_failing_for_fast_gelu)
    monkeypatch.setattr(peers, "time_bound_runs", lambda run, fence, *, target_seconds: (5e-4, 400, 2e-3))
    out = peers.run_ort_webgpu_peers(
        {"rows": [bench_row("com.microsoft.Gelu", bias=False), bench_row()]}, max_elements=MI
    )
    assert out[0]["peer"] == "onnxruntime-webgpu Gelu(X)"
    assert out[1]["note"].split(":")[0] == "onnxruntime-webgpu FastGelu(X, bias) float32 1048576 elements"
    assert "out of memory" in out[1]["note"]


def test_ort_peers_without_a_fence_session_say_so_once(monkeypatch):
    pytest.importorskip("onnx")

    def failing_session(model, providers, config):
        raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : out of memory")

    monkeypatch.setattr(ort_impl.OrtWebGpu, "available", lambda self: None)
    monkeypatch.setattr(ort_impl, "session", failing_session)
    out = peers.run_ort_webgpu_peers(
        {"rows": [bench_row(), bench_row("com.microsoft.Gelu", bias=False)]}, max_elements=MI
    )
    assert len(out) == 1 and out[0]["note"].startswith("onnxruntime-webgpu: no fence session")
    assert "out of memory" in out[0]["note"]


def test_run_peers_returns_the_torch_and_ort_peers_together(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(peers, "run_ort_webgpu_peers", lambda result, max_elements: [peers.note("ort said why")])
    assert peers.run_peers({"rows": [bench_row()]}, MI) == [
        {"note": "torch is not installed: no torch peers timed"},
        {"note": "ort said why"},
    ]
