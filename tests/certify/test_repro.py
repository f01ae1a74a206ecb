"""--repro-dir: standalone repros of an outside implementation's failures, grouped, indexed, confined to DIR.

The ONNX Runtime repros are run as a bug reporter would: ``python -I repro.py`` in the repro's folder, with
nothing of this suite importable. With the real onnxruntime they reproduce the failure (exit 1); with the
stand-in of ``fake_onnxruntime/`` (the ops' contracts in NumPy) they pass (exit 0): removing the bug makes the
repro pass.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cases
from conformance.certify.checker import Checker
from conformance.certify.implementations import NotSupported, load_implementation
from conformance.certify.outcomes import CaseFailed, verdict_for
from conformance.certify.repro.collect import Failure, ReproCollector, group_slug
from conformance.certify.repro.index import check_dir, finalize, safe_name
from conformance.engine.package import load_package
from conformance.errors import ConformanceError

FAKE_ORT = Path(__file__).parent / "fake_onnxruntime"
BIAS = "FastGelu/f16/X[4,3]+bias[1]/reject-no-variant"  # ORT CPU accepts a length-1 bias (f16 only)
EMPTY_ROW = "LayerNormalization/f32/X[2,0]+scale[0]/vec4"  # ORT CPU refuses a row of length 0


@pytest.fixture(scope="module")
def generated():
    out = {}
    for name in ("com.microsoft.FastGelu", "com.microsoft.LayerNormalization", "com.microsoft.Gelu"):
        pkg = load_package(name)
        out[name] = (pkg, {c.id: c for c in cases.generate(pkg)})
    return out


def _failure(impl, generated, package, case_id) -> Failure:
    pkg, found = generated[package]
    with pytest.raises(CaseFailed) as err:
        Checker(impl, repros=True).check(found[case_id], pkg, verdict_for(found[case_id]))
    assert err.value.failure is not None, err.value
    return err.value.failure


def _write(tmp_path, impl, failures):
    collector = ReproCollector(tmp_path / "repros")
    entries = [collector.add(impl, f) for f in failures]
    return [e["repro"] for e in entries], finalize(tmp_path / "repros", entries)


def _run(script: Path, fake: bool = False, **env):
    """``python repro.py`` in its folder: isolated (-I: no PYTHONPATH, no current directory), or with the fake
    onnxruntime first on the path (-I would drop PYTHONPATH, so -s -E with the path set by -c)."""
    if fake:
        cmd = [
            sys.executable,
            "-s",
            "-E",
            "-c",
            f"import sys, runpy; sys.path.insert(0, {str(FAKE_ORT)!r}); "
            f"sys.argv = ['repro.py']; runpy.run_path('repro.py', run_name='__main__')",
        ]
    else:
        cmd = [sys.executable, "-I", script.name]
    return subprocess.run(
        cmd,
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **env},
    )


# -- real ONNX Runtime divergences -------------------------------------------------------------------------------
@pytest.mark.onnxruntime
def test_ort_cpu_accepts_rejected_repro_reproduces_and_passes_without_the_bug(tmp_path, generated):
    ort = load_implementation("onnxruntime-cpu")
    failure = _failure(ort, generated, "com.microsoft.FastGelu", BIAS)
    assert failure.kind == "accepts-rejected" and failure.expected["outcome"] == "rejected"
    assert "biasOk is false" in failure.expected["reason"] and failure.observed["outcome"] == "accepted"
    (path,), index = _write(tmp_path, ort, [failure])
    script = Path(path)
    assert sorted(p.name for p in script.parent.iterdir()) == ["model.onnx", "repro.py"]
    source = script.read_text()
    assert "conformance" not in source.split("\nimport os", 1)[1].split("VERDICT")[0]  # imports numpy, onnxruntime
    real = _run(script)
    assert real.returncode == 1, real.stdout + real.stderr
    assert "observed: accepted" in real.stdout and "Y: float16[4, 3]" in real.stdout
    assert "verdict: REPRODUCED: onnxruntime-cpu accepts a call the manifest rejects" in real.stdout
    assert "input bias: float16[1]" in real.stdout
    fixed = _run(script, fake=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "observed: rejected: RuntimeError: bias of shape [1] does not match X [4, 3]" in fixed.stdout
    assert "behaves as the contract expects" in fixed.stdout


@pytest.mark.onnxruntime
def test_ort_cpu_rejects_accepted_repro_reproduces_and_passes_without_the_bug(tmp_path, generated):
    ort = load_implementation("onnxruntime-cpu")
    failure = _failure(ort, generated, "com.microsoft.LayerNormalization", EMPTY_ROW)
    assert failure.kind == "rejects-accepted" and failure.expected["outputs"]["Y"].shape == (2, 0)
    (path,), index = _write(tmp_path, ort, [failure])
    real = _run(Path(path))
    assert real.returncode == 1, real.stdout + real.stderr
    assert "Size of X.shape[axis:] must be at least 1, got 0" in real.stdout
    assert "expected: the call is accepted, Y float32[2, 0]" in real.stdout
    fixed = _run(Path(path), fake=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "observed: accepted" in fixed.stdout


class Skewed:
    """ONNX Runtime's CPU provider with a planted value bug: every output 1% too large (its repro runs the real,
    unskewed onnxruntime, which is right)."""

    def __new__(cls):
        base = type(load_implementation("onnxruntime-cpu"))

        class _Skewed(base):
            def run(self, case, inputs):
                result = super().run(case, inputs)
                result.outputs = {r: (y.astype(np.float64) * 1.01).astype(y.dtype) for r, y in result.outputs.items()}
                return result

        return _Skewed()


@pytest.mark.onnxruntime
@pytest.mark.parametrize(
    "package, case_id, data",
    [
        ("com.microsoft.Gelu", "Gelu/f32/X[64,36]/vec4#normal1", True),  # data.npz
        ("com.microsoft.LayerNormalization", "LayerNormalization/f32/X[2,8]+scale[8]+bias[8]/vec4_bias", False),
    ],
)
def test_value_failure_repro_compares_with_the_float64_reference(tmp_path, generated, package, case_id, data):
    failure = _failure(Skewed(), generated, package, case_id)
    assert failure.kind == "values" and "differs from the reference" in failure.verdict
    bound = failure.expected["bounds"]["Y"]
    assert bound["rtol"] >= 0 and bound["dtype"] == "float32"
    (path,), index = _write(tmp_path, Skewed(), [failure])
    script = Path(path)
    assert (script.parent / "data.npz").exists() == data
    real = _run(script)  # the real onnxruntime has no such bug
    assert real.returncode == 0, real.stdout + real.stderr
    assert "(float64 reference)" in real.stdout
    skewed = _run(script, fake=True, FAKE_ORT_SCALE="1.01")  # the bug, planted in the stand-in
    assert skewed.returncode == 1, skewed.stdout + skewed.stderr
    assert "elements out of tolerance (worst: [" in skewed.stdout
    unskewed = _run(script, fake=True)
    assert unskewed.returncode == 0, unskewed.stdout + unskewed.stderr


@pytest.mark.onnxruntime
def test_without_repros_a_failure_carries_none(generated):
    pkg, found = generated["com.microsoft.FastGelu"]
    with pytest.raises(CaseFailed) as err:
        Checker(load_implementation("onnxruntime-cpu")).check(found[BIAS], pkg, verdict_for(found[BIAS]))
    assert err.value.divergence == "accepts-rejected" and err.value.failure is None


@pytest.mark.onnxruntime
def test_webgpu_repro_is_the_same_script_with_its_provider(tmp_path, generated):
    cpu_failure = _failure(load_implementation("onnxruntime-cpu"), generated, "com.microsoft.FastGelu", BIAS)
    webgpu = load_implementation("onnxruntime-webgpu")
    files = webgpu.repro_files(cpu_failure)
    assert list(files)[:2] == ["repro.py", "model.onnx"] and "smoke.onnx" in files
    source = files["repro.py"].decode()
    assert "PROVIDER = 'WebGpuExecutionProvider'" in source
    assert "SESSION_CONFIG = {'session.disable_cpu_ep_fallback': '1'}" in source
    cpu = load_implementation("onnxruntime-cpu").repro_files(cpu_failure)
    assert files["model.onnx"] == cpu["model.onnx"]
    (path,), _ = _write(tmp_path, webgpu, [cpu_failure])
    here = _run(Path(path))  # this onnxruntime has no WebGPU provider (or Dawn refuses lavapipe): never a pass
    assert here.returncode == 2 and "cannot run here" in here.stdout, here.stdout + here.stderr


@pytest.mark.onnxruntime
def test_a_call_the_adapter_refused_has_no_ort_repro(generated):
    ort = load_implementation("onnxruntime-cpu")
    for inputs, why in (
        ({"X": np.zeros(2, np.complex64)}, "no ONNX element type"),
        ({"X": None, "bias": np.zeros(2, np.float32)}, "cannot leave it out"),
    ):
        failure = Failure(
            "rejects-accepted",
            "refused",
            "FastGelu/none/x",
            "com.microsoft.FastGelu",
            inputs,
            {},
            {"outcome": "accepted", "outputs": {}, "tolerance": "", "bounds": {}},
            {"outcome": "rejected", "message": "m"},
        )
        with pytest.raises(NotSupported, match=why):
            ort.repro_files(failure)


# -- grouping, the index, confinement (no onnxruntime needed) -------------------------------------------------------
class Writes:
    name, provider = "writes", "ToyProvider"

    def __init__(self, files=None):
        self.files = files

    def repro_files(self, failure):
        return self.files or {"run.py": f"# {failure.case_id}\n".encode(), "data/x.bin": b"\0"}


class Silent:
    name = "silent"  # no repro_files


def _toy(case_id, n, kind="accepts-rejected", predicate="biasOk is false: ranks.bias = 2"):
    expected = {"outcome": "rejected", "reason": f"no-variant: vec4_bias: {predicate}"}
    return Failure(
        kind,
        f"accepts ({predicate})",
        case_id,
        "com.example.Op",
        {"X": np.zeros(n, np.float32), "bias": None},
        {},
        expected,
        {"outcome": "accepted", "outputs": {"Y": np.zeros(n, np.float32)}},
    )


def test_identical_failures_make_one_group_reproduced_by_its_smallest_case(tmp_path):
    failures = [_toy(f"Op/f32/X[{n}]/reject", n) for n in (40, 3, 0, 17)] * 25  # 100 failures, one bug
    failures += [
        _toy(
            "Op/f32/X[5]/reject-other",
            5,
            predicate="biasOk is false: dim(shapes.bias, 0) = 1, dim(shapes.X, ranks.X - 1) = 5",
        )
    ]
    failures += [_toy("Op@2/f32/X[9]/reject", 9, predicate="biasOk is false: ranks.bias = 0")]  # same bug, v2
    paths, index = _write(tmp_path, Writes(), failures)
    assert index["failures"] == 102 and len(index["groups"]) == 2 and index["written"] == 2
    big, small = index["groups"]
    assert big["count"] == 101 and big["signature"] == "biasOk is false: ranks.bias"
    assert big["repro"]["case_id"] == "Op/f32/X[3]/reject"  # the smallest with values (X[0] is empty)
    assert set(big["members"]) == {
        "Op/f32/X[40]/reject",
        "Op/f32/X[3]/reject",
        "Op/f32/X[0]/reject",
        "Op/f32/X[17]/reject",
        "Op@2/f32/X[9]/reject",
    }
    assert (
        small["count"] == 1 and small["signature"] == "biasOk is false: dim(shapes.bias, 0), dim(shapes.X, ranks.X - 1)"
    )
    root = tmp_path / "repros"
    assert (root / big["repro"]["run"]).read_text() == "# Op/f32/X[3]/reject\n"
    assert (root / big["slug"] / "data" / "x.bin").read_bytes() == b"\0"
    assert paths[0] == str(root / big["slug"] / "run.py") and len(set(paths[:100])) == 1
    assert sorted(p.name for p in root.iterdir()) == sorted([big["slug"], small["slug"], "index.json", "index.md"])
    on_disk = json.loads((root / "index.json").read_text())
    assert [g["count"] for g in on_disk["groups"]] == [101, 1]
    md = (root / "index.md").read_text()
    assert "102 failing case(s) in 2 group(s)" in md and f"`{big['slug']}/run.py`" in md


def test_groups_of_several_processes_merge_and_keep_the_smallest(tmp_path):
    root = tmp_path / "repros"
    entries = []
    for ns in ((8, 5), (2, 9)):  # two xdist workers, the same bug
        collector = ReproCollector(root)
        entries += [collector.add(Writes(), _toy(f"Op/f32/X[{n}]/reject", n)) for n in ns]
    assert len(list((root / ".candidates").glob("*/*.json"))) == 2  # each worker's smallest, on disk
    index = finalize(root, entries)
    (group,) = index["groups"]
    assert group["count"] == 4 and group["repro"]["case_id"] == "Op/f32/X[2]/reject"
    assert (root / group["repro"]["run"]).read_text() == "# Op/f32/X[2]/reject\n"
    assert not (root / ".candidates").exists()


def test_a_group_whose_candidate_was_lost_says_so(tmp_path):
    root = tmp_path / "repros"
    entry = ReproCollector(root).add(Writes(), _toy("Op/f32/X[2]/reject", 2))
    shutil.rmtree(root / ".candidates")  # the worker that wrote it died with its disk state half gone
    (group,) = finalize(root, [entry])["groups"]
    assert group["repro"] is None and "no candidate was written" in group["note"]


def test_a_rerun_removes_the_groups_it_no_longer_has_and_nothing_else(tmp_path):
    _, first = _write(
        tmp_path,
        Writes(),
        [_toy("Op/f32/X[2]/reject", 2), _toy("Op/f32/X[5]/reject-b", 5, predicate="dtypeOk is false: x = 1")],
    )
    root = tmp_path / "repros"
    (root / "mine.txt").write_text("kept")
    (kept,) = [g["slug"] for g in first["groups"] if g["members"] == ["Op/f32/X[2]/reject"]]
    _, second = _write(tmp_path, Writes(), [_toy("Op/f32/X[2]/reject", 2)])
    assert [g["slug"] for g in second["groups"]] == [kept]
    assert sorted(p.name for p in root.iterdir()) == sorted([kept, "index.json", "index.md", "mine.txt"])


def test_an_implementation_without_repro_files_is_indexed_with_why(tmp_path):
    _, index = _write(tmp_path, Silent(), [_toy("Op/f32/X[2]/reject", 2), _toy("Op/f32/X[3]/reject", 3)])
    (group,) = index["groups"]
    assert group["repro"] is None and group["count"] == 2
    assert group["note"] == "silent defines no repro_files: nothing written"
    assert "silent defines no repro_files" in (tmp_path / "repros" / "index.md").read_text()
    assert sorted(p.name for p in (tmp_path / "repros").iterdir()) == ["index.json", "index.md"]


def test_a_broken_repro_files_costs_its_repro_not_the_run(tmp_path):
    class Broken(Writes):
        def repro_files(self, failure):
            raise TypeError("oops")

    _, index = _write(tmp_path, Broken(), [_toy("Op/f32/X[2]/reject", 2)])
    assert index["groups"][0]["note"] == "writes.repro_files failed: TypeError: oops"


@pytest.mark.parametrize("name", ["../escape.py", "/tmp/abs.py", "a/b/c.py", ".hidden", "sp ace.py", ""])
def test_unsafe_file_names_are_refused_and_nothing_leaves_the_dir(tmp_path, name):
    _, index = _write(tmp_path, Writes({name: b"x"}), [_toy("Op/f32/X[2]/reject", 2)])
    (group,) = index["groups"]
    assert group["repro"] is None and "not a relative name" in group["note"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["index.json", "index.md", "repros"]


def test_group_and_case_names_are_safe():
    for text in ("../../etc/passwd", "Op/f16/X[]+bias[1]/reject~eps=1e+20", "\x1b[31m", ".x"):
        name = safe_name(text + "a")
        assert "/" not in name and not name.startswith(".") and all(c.isalnum() or c in "._-" for c in name)
    slug = group_slug(
        {
            "implementation": "i",
            "provider": None,
            "op": "com.x/../../Op",
            "kind": "values",
            "signature": "float32: output Y/../..",
        }
    )
    assert "/" not in slug and not slug.startswith(".")


def test_a_symlinked_repro_dir_or_group_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    Path("linked").symlink_to(outside)
    with pytest.raises(ConformanceError, match="symlink"):
        check_dir(Path("linked"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConformanceError, match="not a directory"):
        check_dir(Path("file"))
    root = check_dir(Path("repros"))
    entry = ReproCollector(root).add(Writes(), _toy("Op/f32/X[2]/reject", 2))
    (root / entry["slug"]).symlink_to(outside)  # planted where the group's folder goes
    with pytest.raises(ConformanceError, match="symlink"):
        finalize(root, [entry])
    assert list(outside.iterdir()) == []
    (root / entry["slug"]).unlink()
    shutil.rmtree(root / ".candidates")
    (root / ".candidates").symlink_to(outside)  # and where the candidates go
    later = ReproCollector(root).add(Writes(), _toy("Op/f32/X[3]/reject", 3))
    assert later["repro"] is None and "symlink" in later["note"] and list(outside.iterdir()) == []


def test_certify_passes_repro_dir_absolute(tmp_path):
    import argparse

    from conformance.cli.certify import pytest_command

    args = argparse.Namespace(
        specs=str(Path(__file__).parents[2] / "specs"),
        report=str(tmp_path / "r.json"),
        device="auto",
        webgpu="wgpu",
        impl="onnxruntime-cpu",
        divergences="fail",
        adapter=None,
        expectations=None,
        golden=None,
        run_heavy=False,
        workers=0,
        repro_dir="rel/repros",
    )
    argv = pytest_command(args, tmp_path)
    assert f"--repro-dir={Path('rel/repros').resolve()}" in argv


@pytest.mark.slow
@pytest.mark.onnxruntime
def test_plugin_writes_repros_and_the_report_points_at_them(tmp_path):
    from tests.certify.conftest import run_conformance

    report, root = tmp_path / "r.json", tmp_path / "repros"
    proc = run_conformance(
        "--impl=onnxruntime-cpu", "-k", "FastGelu/f16 and bias", f"--conformance-report={report}", f"--repro-dir={root}"
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    index = json.loads((root / "index.json").read_text())
    assert f"repros: {index['failures']} failing case(s) in {len(index['groups'])} group(s)" in proc.stdout
    data = json.loads(report.read_text())
    diverged = [c for c in data["cases"] if c.get("divergence")]
    assert len(diverged) == index["failures"] >= 10 and len(index["groups"]) < len(diverged)
    by_case = {m: g for g in index["groups"] for m in g["members"]}
    for case in diverged:
        assert case["repro"] == str(root / by_case[case["id"]]["repro"]["run"])
    assert "standalone repro" in report.with_suffix(".html").read_text()
    assert f"standalone repro: `{diverged[0]['repro']}`" in report.with_suffix(".md").read_text()
    first = root / index["groups"][0]["repro"]["run"]
    assert _run(first).returncode == 1


def test_repro_dir_refuses_the_manifest_runtime(tmp_path):
    from tests.certify.conftest import run_conformance

    proc = run_conformance("--impl=manifest", f"--repro-dir={tmp_path}", "--collect-only")
    assert proc.returncode == 4 and "--repro-dir: writes repros of an implementation outside" in proc.stderr


def test_the_index_says_how_each_kind_of_repro_runs():
    from conformance.certify.repro.index import how_to_run

    script, page = {"repro": {"run": "g1/repro.py"}}, {"repro": {"run": "g2/index.html"}}
    assert how_to_run([script]).startswith("Run a script from its folder with `python <file>`")
    assert "index.html" not in how_to_run([script])
    assert how_to_run([page]).startswith(
        "Open a page (`index.html`) from a local HTTP server"
    ) and "python" not in how_to_run([page])
    both = how_to_run([script, page, {"repro": None}])
    assert "`python <file>`" in both and "PASS" in both
    assert how_to_run([{"repro": None}]) == "No group has a repro."
