"""Speed, measured and printed, never asserted in the default run (``python -m pytest benchmarks -q -s``).

What the test suite checks about budgets is counted in work; how long that work takes on a machine is measured here.
"""

from __future__ import annotations

import shutil
import time

import numpy as np
import pytest

from conformance import BASELINE, ConformanceError, load_kernel
from conformance.engine.package import REPO_SPECS
from conformance.gpu.device import get_device
from conformance.gpu.runtime import Runtime
from conformance.gpu.timing import Timer
from conformance.shader import render as render_module
from conformance.shader.render import render, work_spent
from conformance.tools.bench import Baselines

CALLS = {
    "com.microsoft.Gelu": {"X": ((4, 1000), "float32")},
    "com.microsoft.LayerNormalization": {"X": ((4, 1000), "float32"), "scale": ((1000,), "float32")},
}


@pytest.mark.parametrize("package", sorted(CALLS))
def test_render_speed(package):
    """Units of work per second of a shipped template's render: what the work budget is worth in seconds here."""
    kernel = load_kernel(REPO_SPECS / package)
    plan = kernel.plan(profile=BASELINE, **CALLS[package])
    before, start = work_spent(kernel.package), time.perf_counter()
    render(kernel.package, plan, plan.passes[0])
    seconds, units = time.perf_counter() - start, work_spent(kernel.package) - before
    print(f"\n{package}: {units:,} units in {seconds * 1e3:.1f} ms ({units / seconds / 1e6:.1f} M units/s)")


def test_seconds_to_refuse_a_bomb(tmp_path):
    """How long a template that runs out of the work budget takes to be refused here."""
    pkg = tmp_path / "Gelu"
    shutil.copytree(REPO_SPECS / "com.microsoft.Gelu", pkg)
    template = pkg / "elementwise-bias-gelu.wgsl.jinja"
    template.write_text(
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}\n" + template.read_text()
    )
    kernel = load_kernel(pkg)
    plan = kernel.plan(profile=BASELINE, X=((8,), "float32"))
    start = time.perf_counter()
    with pytest.raises(ConformanceError):
        render(kernel.package, plan, plan.passes[0])
    print(f"\nrefused after {render_module.RENDER_WORK_LIMIT:,} units in {time.perf_counter() - start:.2f} s")


def test_interleaved_passes_keep_their_order():
    """A 16-byte copy pass is timed shorter than the 256 KiB GELU pass around it (timestamps: each span is its own)."""
    device = get_device("vulkan")
    if "timestamp-query" not in device.profile.features:
        pytest.skip("no timestamps on this device")
    kernel = load_kernel("com.microsoft.Gelu", device=device, version=1)
    x = np.ones(1 << 16, np.float32)
    bound = Runtime(device, kernel.package).bind(kernel.plan(X=x), {"X": x})
    try:
        timer = Timer(device, reps=4, warmup=1, warmup_seconds=0.0)
        small = Baselines(device, timer).shader_pass(bound.buffers["X"], bound.buffers["Y"], 16)
        kernel_t, small_t, big_t = timer.time_passes([bound.record, small, bound.record])
    finally:
        bound.release()
    print(
        f"\nGELU {kernel_t.median * 1e6:.1f} us, 16-byte copy {small_t.median * 1e6:.1f} us, "
        f"GELU {big_t.median * 1e6:.1f} us"
    )
    assert small_t.median < kernel_t.median and small_t.median < big_t.median
