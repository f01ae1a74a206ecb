"""``python -m conformance bench`` on the real device at small sizes, and its reporting."""

import json

from conformance import load_kernel
from conformance.gpu.timing import Timer, Timing
from conformance.tools import bench
from tests.runtime.conftest import SteppingClock


def test_bench_rows_are_ratios_to_same_run_copies_and_land_in_the_json(device, tmp_path):
    kernel = load_kernel("com.microsoft.Gelu", device=device, version=1)
    out = tmp_path / "bench.json"
    result = bench.run_bench(
        [kernel],
        max_elements=4096,
        reps=3,
        sweep=False,
        write_tuning=False,
        out=out,
        plot=None,
        warmup_seconds=0.05,
        peers=True,
    )
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
    row = {
        "package": "p",
        "variant": "v",
        "dtype": "float32",
        "shape": [4],
        "workgroup_size": 256,
        "gbps": 1.0,
        "spread": 0.0,
        "vs_copy_shader": 1.0,
        "vs_copy_buffer": 1.0,
    }
    table = bench.format_table(
        {
            "device": {},
            "timing": "timestamp",
            "rows": [row | {"settled": False}, row | {"settled": True}, row | {"settled": None}],
        }
    )
    assert table.count("unsettled: GPU speed still changing") == 1


def test_a_copy_timed_right_after_a_kernel_skips_the_timed_warm_up(device):
    import wgpu

    buf = device.device.create_buffer(size=64, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
    other = device.device.create_buffer(size=64, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
    timer = Timer(device, reps=3, warmup=1, warmup_seconds=2.0, settle_seconds=0.2, clock=SteppingClock(0.5))
    timing = timer.time_encoder(lambda enc: enc.copy_buffer_to_buffer(buf, 0, other, 0, 64), warm=True)
    assert timer.warmup_runs == 1 and len(timing.samples) == 3
    timer.time_encoder(lambda enc: enc.copy_buffer_to_buffer(buf, 0, other, 0, 64))
    assert timer.warmup_runs == 4  # 2 s of a clock that moves 0.5 s a reading


def test_rows_carry_best_copy_ratio_and_a_kernel_faster_than_every_copy_is_a_bench_error(device):
    kernel = load_kernel("com.microsoft.Gelu", device=device, version=2)
    result = bench.run_bench(
        [kernel], max_elements=4096, reps=3, sweep=False, write_tuning=False, out=None, plot=None, warmup_seconds=0.05
    )
    assert {r["variant"] for r in result["rows"]} >= {"vec4", "split_f32"}  # 4096 and 4097 elements
    for r in result["rows"]:
        assert r["version"] == 2 and r["webgpu"] == "wgpu"
        assert set(r["copies_gbps"]) >= {
            "copy shader vec4<u32>",
            "copy shader 2x vec4<u32>",
            "copy shader 4x vec4<u32>",
            "copy_buffer_to_buffer",
        }
        assert r["best_copy_gbps"] == max(r["copies_gbps"].values())
        assert abs(r["best_copy_ratio"] - r["gbps"] / r["best_copy_gbps"]) < 1e-9
    assert result["best_copy"]["by_size"] and result["best_copy"]["spec_peak_gbps"] is None  # llvmpipe: unknown
    row = bench.Row(
        "p",
        "v",
        "float32",
        [4],
        False,
        256,
        32,
        1.0,
        0.01,
        "timestamp",
        10.0,
        9.0,
        8.0,
        best_copy_gbps=9.0,
        best_copy="copy shader vec4<u32>",
        best_copy_spread=0.01,
    )
    assert bench.bench_error(row) and "above 1 + noise" in bench.bench_error(row)
    row.error = bench.bench_error(row)
    table = bench.format_table(
        {"device": {}, "timing": "timestamp", "rows": [bench.row_dict(row)], "bench_errors": [row.error]}
    )
    assert "BENCH ERROR, not a result" in table
    row.gbps = 9.1  # within the noise
    assert bench.bench_error(row) is None
    row.copies_gbps = {"copy shader vec4<u32>": 9.0, "copy_buffer_to_buffer": 2.0, bench.CUDA_COPY: 8.0}
    assert bench.bench_error(row) is None  # the CUDA copy slower than the shader, as below 1 Mi elements
    row.copies_gbps[bench.CUDA_COPY] = 20.0  # the H200's first row of a cold run: shader copies at idle clocks
    assert "clocks differed" in bench.bench_error(row) and "copy shader vec4<u32>" in bench.bench_error(row)
    assert bench.spec_peak_gbps("NVIDIA H200") == 4800.0


def test_side_by_side_pairs_the_same_call_on_each_implementation():
    base = {
        "package": "p",
        "version": 2,
        "variant": "v",
        "dtype": "float16",
        "shape": [8],
        "bias": False,
        "vs_copy_shader": 1.0,
    }
    rows = [
        base | {"webgpu": "wgpu", "gbps": 100.0, "best_copy_ratio": 0.9},
        base | {"webgpu": "dawn", "gbps": 50.0, "best_copy_ratio": 0.45},
        base | {"webgpu": "wgpu", "shape": [16], "gbps": 1.0, "best_copy_ratio": 0.1},
    ]
    (entry,) = bench.side_by_side(rows)
    assert entry["gbps"] == {"wgpu": 100.0, "dawn": 50.0} and entry["gbps_over_wgpu"] == {"dawn": 0.5}
    assert "dawn/wgpu" in bench.format_side_by_side([entry])


def test_webgpu_option_takes_a_list_or_all():
    import argparse

    import pytest

    from conformance.cli.bench import webgpu_list

    assert webgpu_list("wgpu,dawn") == ["wgpu", "dawn"] and webgpu_list("all") == [
        "wgpu",
        "dawn",
        "chromium",
        "firefox",
    ]
    with pytest.raises(argparse.ArgumentTypeError):
        webgpu_list("wgpu,naga")


def test_a_call_budget_times_only_that_many_calls_and_says_so(device, tmp_path, capsys):
    kernel = load_kernel("com.microsoft.Gelu", device=device)
    result = bench.run_implementations(
        ["wgpu"],
        lambda webgpu: [kernel],
        out=tmp_path / "b.json",
        plot=None,
        max_elements=4096,
        reps=3,
        sweep=False,
        write_tuning=False,
        warmup_seconds=0.05,
        max_calls=1,
    )
    (run,) = result["runs"]
    assert len({(r["variant"], r["dtype"], tuple(r["shape"])) for r in run["rows"]}) == 1, run["rows"]
    assert "not timed: past --max-calls 1" in run["truncated"]
    assert "bench wgpu: 1/1 (100%): com.microsoft.Gelu" in capsys.readouterr().err  # progress, as in a CI log
    assert json.loads((tmp_path / "b.json").read_text())["implementations"] == {"wgpu": "benched"}
    assert "TRUNCATED" in bench.format_table(result)


def test_a_kernel_reading_two_tensors_of_its_size_is_also_measured_against_the_two_input_copy(device):
    """Two reads per write run faster than one per write on an HBM GPU (Add beat the plain copy by 3 % on the
    H200), so such a kernel's best_copy includes the two-input copy, counted as three streams."""
    add = load_kernel("ai.onnx.Add", device=device)
    gelu = load_kernel("com.microsoft.Gelu", device=device, version=2)
    result = bench.run_bench(
        [add, gelu],
        max_elements=4096,
        reps=3,
        sweep=False,
        write_tuning=False,
        out=None,
        plot=None,
        warmup_seconds=0.05,
    )
    by_op = {}
    for r in result["rows"]:
        by_op.setdefault(r["package"], []).append(r)
    assert all(bench.COPY2 in r["copies_gbps"] for r in by_op["ai.onnx.Add"])
    assert not any(bench.COPY2 in r["copies_gbps"] for r in by_op["com.microsoft.Gelu"])
    assert "dst[i] = a[i] ^ b[i]" in bench.copy2_shader()


def test_a_call_that_fails_is_listed_and_the_run_goes_on(device, package_copy):
    """A kernel that fails at one size is a finding (failed_calls, a FAILED CALL line), not the end of the run."""
    root = package_copy("com.microsoft.Gelu@2")
    template = root / "elementwise-bias-gelu.wgsl.jinja"
    text = template.read_text()
    assert "yTail[e] = {{ scalar }}(gelu1(f32(xTail[e])));" in text
    template.write_text(text.replace("yTail[e] = {{ scalar }}(gelu1(f32(xTail[e])));", "yTail[e] = no_such_name;"))
    result = bench.run_bench(
        [load_kernel(root, device=device)],
        max_elements=4096,
        reps=3,
        sweep=False,
        write_tuning=False,
        out=None,
        plot=None,
        warmup_seconds=0.05,
    )
    assert {r["variant"] for r in result["rows"]} >= {"vec4", "vec8_f16"}  # the aligned calls still ran
    assert not any(r["variant"].startswith("split_") for r in result["rows"])
    assert result["failed_calls"] and all("X[4097]" in f for f in result["failed_calls"])
    assert "FAILED CALL: " in bench.format_table(result)


def test_row_ops_are_benched_on_rows_not_one_long_row():
    rows = load_kernel("com.microsoft.LayerNormalization")
    gelu = load_kernel("com.microsoft.Gelu", version=2)
    shapes = {tuple(args["X"][0]) for args, _ in bench.bench_calls(rows, [1 << 20], ["float32"])}
    assert shapes == {(1024, 1024), (1024, 1023)}
    assert {tuple(args["X"][0]) for args, _ in bench.bench_calls(gelu, [1 << 20], ["float32"])} == {
        (1024, 1024),
        ((1 << 20) + 1,),
    }


def test_model_shapes_come_from_the_op_records_activation_and_name_their_configurations():
    from conformance.tools.shapes import model_shapes

    ln, softmax = load_kernel("com.microsoft.LayerNormalization"), load_kernel("com.microsoft.Softmax")
    gelu = load_kernel("com.microsoft.FastGelu", version=2)
    hidden = {s.shape: s.source for s in bench.kernel_shapes(ln, "models")}
    assert hidden[(1, 128, 768)] == "BERT-base seq 128 hidden, GPT-2 seq 128 hidden"
    assert (1, 512, 4096) in hidden and all(len(s) == 3 for s in hidden)
    assert {s.shape for s in bench.kernel_shapes(softmax, "models")} >= {(1, 12, 128, 128), (1, 32, 512, 512)}
    assert (1, 512, 3072) in {s.shape for s in bench.kernel_shapes(gelu, "models")}
    assert not any("7B" in s.source for s in model_shapes("intermediate"))  # its MLP is SwiGLU, not GELU
    calls = list(bench.shape_calls(gelu, "models", ["float32"]))
    assert {args["bias"][0] for args, _ in calls if args.get("bias")} == {(3072,), (4096,)}  # bias: the last dim


def test_a_shape_run_benches_those_shapes_with_their_source_and_peers_take_them(device):
    from conformance.tools.peers import selected_rows
    from conformance.tools.shapes import BenchShape

    kernel = load_kernel("com.microsoft.Softmax", device=device)
    result = bench.run_bench(
        [kernel],
        max_elements=4096,
        reps=3,
        sweep=False,
        write_tuning=False,
        out=None,
        plot=None,
        warmup_seconds=0.05,
        shapes=[BenchShape((2, 3, 40), ("test shape",))],
    )
    assert {tuple(r["shape"]) for r in result["rows"]} == {(2, 3, 40)}
    assert all(r["source"] == "test shape" for r in result["rows"])
    assert "[2, 3, 40] test shape" in bench.format_table(result)
    assert list(selected_rows(result, 4096)) == result["rows"]  # 240 elements: below the grid rows' 1 Mi


def test_a_size_range_or_shape_list_with_nothing_to_bench_is_an_error_that_says_why(device):
    import pytest

    from conformance.tools.shapes import BenchShape

    kernel = load_kernel("ai.onnx.Add", device=device)
    options = dict(reps=3, sweep=False, write_tuning=False, out=None, plot=None, warmup_seconds=0.05)
    with pytest.raises(bench.NothingToBench, match=r"393216 .*no size of the built-in grid .*--shape"):
        bench.run_bench([kernel], min_elements=393216, max_elements=393216, **options)
    softmax = load_kernel("com.microsoft.Softmax", device=device)
    huge = 1 << 31  # elements: past any device's binding limit, so never allocated
    with pytest.raises(bench.NothingToBench, match=f"--shape {huge}: no package .*binding limit"):
        bench.run_bench([softmax], max_elements=0, shapes=[BenchShape((huge,), ("x",))], **options)
    with pytest.raises(bench.NothingToBench, match="--shape"):
        bench.run_implementations(["wgpu"], lambda webgpu: [kernel], min_elements=5, max_elements=6, **options)


def test_bench_command_line_refuses_a_malformed_shape_and_shapes_with_sweep(capsys):
    import pytest

    from conformance.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["bench", "--shape", "1,x,3"])
    assert exc.value.code == 2 and "--shape '1,x,3': expected positive integers" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--sweep tunes at the size grid"):
        main(["bench", "--shapes", "models", "--sweep", "--packages", "Softmax"])
    with pytest.raises(SystemExit, match="--shapes and --shape"):
        main(["bench", "--shapes", "models", "--shape", "4,4"])
