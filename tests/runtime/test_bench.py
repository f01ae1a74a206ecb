"""``python -m conformance bench`` on the real device at small sizes, and its reporting."""

import json
import time

from conformance import load_kernel
from conformance.gpu.timing import Timer, Timing
from conformance.tools import bench


def test_bench_rows_are_ratios_to_same_run_copies_and_land_in_the_json(device, tmp_path):
    kernel = load_kernel("com.microsoft.Gelu", device=device, version=1)
    out = tmp_path / "bench.json"
    result = bench.run_bench([kernel], max_elements=4096, reps=3, sweep=False, write_tuning=False, out=out,
                             plot=None, warmup_seconds=0.05, peers=True)
    rows = result["rows"]
    assert {(r["variant"], r["dtype"]) for r in rows} >= {("vec4", "float32"), ("scalar", "float32")}
    for r in rows:
        assert r["gbps"] > 0 and r["copy_shader_gbps"] > 0
        assert abs(r["vs_copy_shader"] - r["gbps"] / r["copy_shader_gbps"]) < 1e-9
        assert (r["settled"] is None) if r["method"] == "wall" else isinstance(r["settled"], bool)
    stored = json.loads(out.read_text())
    assert stored["rows"] == json.loads(json.dumps(rows))
    assert result["peers"] and stored["peers"] == json.loads(json.dumps(result["peers"]))  # notes, here
    assert "com.microsoft.Gelu" in bench.format_table(result)


def test_a_row_that_never_settled_says_so():
    t = Timing((1.0,), "timestamp", settled=True)
    assert bench._all_settled(t, Timing((1.0,), "wall"), t) is True
    assert bench._all_settled(t, Timing((1.0,), "timestamp", settled=False)) is False
    assert bench._all_settled(Timing((1.0,), "wall"), Timing((1.0,), "wall")) is None
    row = {"package": "p", "variant": "v", "dtype": "float32", "shape": [4], "workgroup_size": 256, "gbps": 1.0,
           "spread": 0.0, "vs_copy_shader": 1.0, "vs_copy_buffer": 1.0}
    table = bench.format_table({"device": {}, "timing": "timestamp",
                                "rows": [row | {"settled": False}, row | {"settled": True}, row | {"settled": None}]})
    assert table.count("unsettled: GPU speed still changing") == 1


def test_a_copy_timed_right_after_a_kernel_skips_the_timed_warm_up(device):
    import wgpu
    buf = device.device.create_buffer(size=64, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
    other = device.device.create_buffer(size=64, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
    timer = Timer(device, reps=3, warmup=1, warmup_seconds=2.0, settle_seconds=0.2)
    start = time.perf_counter()
    timing = timer.time_encoder(lambda enc: enc.copy_buffer_to_buffer(buf, 0, other, 0, 64), warm=True)
    assert time.perf_counter() - start < 1.5 and len(timing.samples) == 3
    start = time.perf_counter()
    timer.time_encoder(lambda enc: enc.copy_buffer_to_buffer(buf, 0, other, 0, 64))
    assert time.perf_counter() - start >= 2.0
