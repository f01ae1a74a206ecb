"""GPU timing on the real device: timestamp samples per repetition, warm-up by count and by time."""

import time

import numpy as np

from conformance import load_kernel
from conformance.runtime import Runtime
from conformance.timing import Timer


def test_timestamps_give_one_positive_sample_per_repetition_after_a_timed_warm_up(device):
    kernel = load_kernel("com.microsoft.Gelu", device=device)
    x = np.ones(1 << 14, np.float32)
    plan = kernel.plan(X=x)
    bound = Runtime(device, kernel.package).bind(plan, {"X": x})
    try:
        timer = Timer(device, reps=5, warmup=2, warmup_seconds=0.3)
        start = time.perf_counter()
        timing = timer.time_pass(bound.record)
        elapsed = time.perf_counter() - start
    finally:
        bound.release()
    assert timing.method == ("timestamp" if "timestamp-query" in device.profile.features else "wall")
    assert len(timing.samples) == 5 and all(0 < s < 1 for s in timing.samples)
    assert elapsed >= 0.3 and timing.median > 0 and timing.spread >= 0
