"""GPU timing on the real device: timestamp samples per repetition, warm-up by count and by time (a stepping
clock stands in for the wall clock, so no assertion depends on the machine's speed)."""

from contextlib import contextmanager

import numpy as np

from conformance import load_kernel
from conformance.gpu.runtime import Runtime
from conformance.gpu.timing import Timer
from tests.runtime.conftest import SteppingClock


@contextmanager
def bound_gelu(device, n):
    """The Gelu kernel bound to ``n`` ones (f32), released afterwards."""
    kernel = load_kernel("com.microsoft.Gelu", device=device, version=1)
    x = np.ones(n, np.float32)
    bound = Runtime(device, kernel.package).bind(kernel.plan(X=x), {"X": x})
    try:
        yield bound
    finally:
        bound.release()


def test_timestamps_give_one_positive_sample_per_repetition_after_a_timed_warm_up(device):
    with bound_gelu(device, 1 << 14) as bound:
        clock = SteppingClock(0.125)
        timer = Timer(device, reps=5, warmup=2, warmup_seconds=0.375, clock=clock)
        timing = timer.time_pass(bound.record)
    assert timing.method == ("timestamp" if "timestamp-query" in device.profile.features else "wall")
    assert len(timing.samples) == 5 and all(0 < s < 1 for s in timing.samples)
    # 2 runs unclocked, then one reading each until 0.375 s of clock have passed: 4 runs, not the 2 asked for
    assert timer.warmup_runs == 4 and timing.median > 0 and timing.spread >= 0


def test_interleaved_passes_give_one_timing_each_in_the_order_given(device):
    """The bench times a kernel and its copy baseline interleaved; each record keeps its own samples."""
    from conformance.tools.bench import Baselines

    with bound_gelu(device, 1 << 16) as bound:
        timer = Timer(device, reps=4, warmup=1, warmup_seconds=0.0)
        baselines = Baselines(device, timer)
        small = baselines.shader_pass(bound.buffers["X"], bound.buffers["Y"], 16)  # one workgroup
        kernel_t, small_t, big_t = timer.time_passes([bound.record, small, bound.record])
    assert all(len(t.samples) == 4 for t in (kernel_t, small_t, big_t))
    assert kernel_t.samples != small_t.samples and small_t.samples != big_t.samples  # each its own spans


def test_settling_waits_for_the_gpu_speed_to_stop_changing(device, monkeypatch):
    """Probe batches continue while the time per repetition still falls (clocks ramping), stop once it holds."""
    from conformance.gpu.timing import Timing

    speeds = iter([2.5e-3, 1.6e-3, 1.0e-3, 0.99e-3, 0.5e-3])  # ramping, then steady (0.99 within 3% of 1.0)
    probes = []

    def fake_timestamps(self, encode, reps, per_rep):
        probes.append(reps)
        return [Timing((next(speeds),) * reps, "timestamp")] * per_rep

    monkeypatch.setattr(Timer, "_timestamps", fake_timestamps)
    timer = Timer(device, probe_reps=5, settle_seconds=10.0)
    assert timer._settle(lambda *a: None, 1) is True and probes == [5, 5, 5, 5]


def test_settling_gives_up_after_its_time_and_says_so(device, monkeypatch):
    from conformance.gpu.timing import Timing

    state = {"t": 1e-3}

    def never_steady(self, encode, reps, per_rep):  # alternates 1 ms / 2 ms: never two alike in a row
        state["t"] = 3e-3 - state["t"]
        return [Timing((state["t"],) * reps, "timestamp")] * per_rep

    monkeypatch.setattr(Timer, "_timestamps", never_steady)
    clock = SteppingClock(0.05)
    assert Timer(device, settle_seconds=0.2, clock=clock)._settle(lambda *a: None, 2) is False
    assert clock.reads == 5  # the start, then one reading after each of four probes: 0.2 s of clock
