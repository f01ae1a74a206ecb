"""test.json / bench.json: export into the published layout, then --specs runs the stored cases."""

import json

import numpy as np
import pytest

import cases
from conformance.certify.testjson import TEST_FORMAT, decode_array, encode_array, load_test_cases
from conformance.engine.package import load_package
from conformance.shader.render import case_plans
from conformance.tools.export import BENCH_FORMAT, METADATA_FILE, METADATA_FORMAT, export_package


def test_array_encoding_round_trips():
    for a in (np.arange(7, dtype=np.float16).reshape(7), np.array(-0.0, np.float32), np.zeros((2, 0), np.float32)):
        b = decode_array(json.loads(json.dumps(encode_array(a))))
        assert b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == a.tobytes()


def test_export_writes_both_files_in_the_published_layout(published):
    root = published("com.microsoft.Gelu")
    test, bench = export_package(root / "com.microsoft.Gelu")
    assert test.parent == root / "com.microsoft.Gelu" / "build" / "webgpu" == bench.parent
    data, bench_data = json.loads(test.read_text()), json.loads(bench.read_text())
    assert data["format"] == TEST_FORMAT and bench_data["format"] == BENCH_FORMAT
    assert test.stat().st_size < 2 << 20
    accepted = [c for c in data["cases"] if c["expect"]["outcome"] == "accepted"]
    assert accepted and all(len(c["outputs"]["Y"]) == np.prod(c["expect"]["outputs"]["Y"]["shape"]) for c in accepted)
    assert {"WORKGROUP_SIZE"} == set(bench_data["tuning"]["tunables"])
    stored = load_test_cases(load_package(root / "com.microsoft.Gelu"))
    assert len(stored) == len(data["cases"]) and all(c.id.startswith("test.json/") for c in stored)


@pytest.mark.slow
def test_specs_runs_the_stored_cases(published, tmp_path):
    from tests.certify.conftest import run_conformance

    root = published("com.microsoft.Gelu")
    export_package(root / "com.microsoft.Gelu")
    report = tmp_path / "r.json"
    proc = run_conformance(f"--specs={root}", "-k", "f32", f"--conformance-report={report}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    ran = json.loads(report.read_text())["cases"]
    stored = [c for c in ran if c["id"].startswith("test.json/")]
    assert len(stored) > 20 and all(c["status"] in ("passed", "skipped") for c in stored)
    assert len(ran) > len(stored)  # the generated cases ran too


def test_row_ops_export_per_element_tolerances_and_every_required_input(published):
    """LayerNormalization's tolerance depends on each row: test.json stores it per element (elementAtol) with the
    record's parameters; bench.json feeds scale (required) in every case; the stored cases pass."""
    from conformance.certify.checker import Checker
    from conformance.certify.implementations import ManifestImplementation
    from conformance.certify.outcomes import verdict_for

    name = "com.microsoft.LayerNormalization"
    root = published(name)
    test, bench = export_package(root / name)
    data, bench_data = json.loads(test.read_text()), json.loads(bench.read_text())
    accepted = [c for c in data["cases"] if c["expect"]["outcome"] == "accepted" and c["outputs"]["Y"]]
    assert accepted and all(len(c["tolerance"]["Y"]["elementAtol"]) == len(c["outputs"]["Y"]) for c in accepted)
    # the tolerance model's epsilon is the case's own (the attributes family varies it), else the default
    assert all(
        c["tolerance"]["Y"]["parameters"]["epsilon"] == c.get("attributes", {}).get("epsilon", 1e-5) for c in accepted
    )
    assert any("epsilon" in c.get("attributes", {}) for c in accepted)
    assert all("scale" in c["inputs"] for c in bench_data["cases"])
    package = load_package(root / name)
    checker = Checker(ManifestImplementation("vulkan"))
    stored = [c for c in load_test_cases(package) if "values_op" in c.markers][:4]
    assert stored
    for case in stored:
        checker.check(case, package, verdict_for(case))


def test_a_version_beyond_1_names_itself_in_test_json_and_loads_back(published):
    """test.json names the versioned package (com.microsoft.Gelu@2), as loading it checks; naming the op made every
    version beyond 1 unloadable, so mutate and --specs could not run its stored cases."""
    name = "com.microsoft.Gelu@2"
    root = published(name)
    test, _ = export_package(root / name)
    assert json.loads(test.read_text())["package"] == name
    stored = load_test_cases(load_package(root / name))
    assert stored and all(c.id.startswith("test.json/Gelu@2/") for c in stored)


def test_metadata_records_the_portable_subset_check_and_the_engine_version(published, monkeypatch):
    """metadata.json says whether @huggingface/jinja (which version) renders and evaluates the package as the suite
    does: passed for the shipped Gelu, failed with the error for a rendered boolean, not checked without node."""
    root = published("com.microsoft.Gelu")
    test, _ = export_package(root / "com.microsoft.Gelu")
    meta = json.loads((test.parent / METADATA_FILE).read_text())
    assert meta["format"] == METADATA_FORMAT and meta["package"] == "com.microsoft.Gelu"
    check = meta["portableSubset"]
    assert check["engine"] == "@huggingface/jinja" and check["version"] == "0.5.11"
    assert check["checked"] and check["passed"] and check["errors"] == []
    # one per distinct (template, context) the generated cases render: more than one, far fewer than the cases
    package = load_package(root / "com.microsoft.Gelu")
    assert 1 < check["templateContexts"] <= len(list(case_plans(package, cases.generate(package))))
    template = test.parent / "elementwise-bias-gelu.wgsl.jinja"
    template.write_text(template.read_text().replace("{{ declarations }}\n", "{{ declarations }}\n// {{ usesF16 }}\n"))
    export_package(root / "com.microsoft.Gelu")
    check = json.loads((test.parent / METADATA_FILE).read_text())["portableSubset"]
    assert check["checked"] and not check["passed"] and "a rendered boolean" in check["errors"][0]
    monkeypatch.setenv("PATH", "/nonexistent")
    export_package(root / "com.microsoft.Gelu")
    check = json.loads((test.parent / METADATA_FILE).read_text())["portableSubset"]
    assert check == {"engine": "@huggingface/jinja", "checked": False, "reason": "no node on PATH"}
