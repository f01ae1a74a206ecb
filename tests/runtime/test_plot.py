"""``plot`` and the tuning table's keys: what a bench result turns into after the run."""

import json
import sys
from types import SimpleNamespace

from conformance.__main__ import main
from conformance.gpu import tuning
from conformance.tools import bench

ROW = {
    "package": "com.microsoft.Gelu",
    "version": 1,
    "variant": "vec4",
    "dtype": "float32",
    "bias": False,
    "bytes_moved": 32768,
    "gbps": 10.0,
    "vs_copy_shader": 0.9,
    "copy_shader_gbps": 11.0,
}


def test_plot_without_matplotlib_is_one_line_saying_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    source = tmp_path / "bench.json"
    source.write_text(json.dumps({"device": {"adapter": "llvmpipe"}, "rows": [ROW]}))
    png = tmp_path / "bench.png"
    assert main(["plot", str(source), str(png)]) == 2
    out, err = capsys.readouterr()
    assert "wrote" not in out and not png.exists()
    assert err.strip().count("\n") == 0 and "pip install 'webgpu-kernel-conformance[bench]'" in err, err


def test_plot_of_a_file_that_is_not_a_bench_result_names_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "pyplot", lambda: None)  # matplotlib or not, the file is read first
    source = tmp_path / "report.json"
    source.write_text(json.dumps({"result": "conforms"}))
    assert main(["plot", str(source), str(tmp_path / "x.png")]) == 2
    assert f"{source}: not a bench JSON file" in capsys.readouterr().err


def test_the_plot_title_names_the_packages_plotted():
    rows = [ROW, {**ROW, "version": 2}, {**ROW, "package": "com.microsoft.LayerNormalization"}]
    assert bench.plot_title(rows, "llvmpipe") == "Gelu, Gelu@2, LayerNormalization vs copy baselines: llvmpipe"
    assert "GELU" not in bench.plot_title([{**ROW, "package": "ai.onnx.Add"}], "H200")


def test_tuning_rows_of_two_versions_of_a_package_keep_their_own_keys(tmp_path, monkeypatch):
    summary = {"adapter": "test adapter", "backend": "Vulkan"}
    best = [
        {"package": "com.microsoft.Gelu", "version": 1, "dtype": "float32", "variant": "vec4", "WORKGROUP_SIZE": 64},
        {"package": "com.microsoft.Gelu", "version": 2, "dtype": "float32", "variant": "vec4", "WORKGROUP_SIZE": 512},
    ]
    path = tuning.write(SimpleNamespace(summary=summary), best, tmp_path)
    keys = [tuning.entry_key(e) for e in json.loads(path.read_text())]
    assert len(set(keys)) == 2 and {k[1] for k in keys} == {1, 2}
    monkeypatch.setattr(tuning, "user_tables", lambda: tmp_path)
    tuning._load.cache_clear()
    assert tuning.lookup(summary, "com.microsoft.Gelu", 1, "float32", "vec4") == {"WORKGROUP_SIZE": 64}
    assert tuning.lookup(summary, "com.microsoft.Gelu", 2, "float32", "vec4") == {"WORKGROUP_SIZE": 512}
    tuning._load.cache_clear()


def test_a_table_written_before_versions_reads_as_version_one():
    entry = {"package": "com.microsoft.FastGelu", "dtype": "float32", "variant": "vec4_bias", "WORKGROUP_SIZE": 256}
    assert tuning.entry_key(entry) == ("com.microsoft.FastGelu", 1, "float32", "vec4_bias")
