"""``merge`` over reports of different package sets: digests compared only where the reports share a package."""

import json

import pytest

from conformance.__main__ import main
from conformance.certify import report
from conformance.certify.report import matrix
from conformance.engine.package import REPO_SPECS, load_package
from conformance.errors import ConformanceError


def a_report(packages, adapter="llvmpipe"):
    """A report of the shipped packages named (their real identities: names, roots, sha256 of every file)."""
    identity = [load_package(REPO_SPECS / name).identity for name in packages]
    verdicts = [
        {
            "id": f"{name.split('.')[-1]}/f32/X[5]/vec4",
            "package": name,
            "variant": "vec4",
            "dtype": "float32",
            "family": "ranks",
            "status": "passed",
            "worst_ratio": None,
            "detail": "",
        }
        for name in packages
    ]
    device = {"adapter": adapter, "backend": "Vulkan", "driver": "Mesa", "webgpu": "wgpu", "features": []}
    return report.build(
        verdicts, identity=identity, device=device, implementation="manifest", skipped_reasons={}, deselected_heavy=0
    )


def test_reports_of_different_package_sets_merge_and_say_what_each_lacks(tmp_path, capsys):
    both = tmp_path / "both.json"
    gelu = tmp_path / "gelu.json"
    both.write_text(json.dumps(a_report(["com.microsoft.Gelu", "ai.onnx.Add"])))
    gelu.write_text(json.dumps(a_report(["com.microsoft.Gelu"], adapter="SwiftShader")))
    out = tmp_path / "matrix.md"
    assert main(["merge", str(both), str(gelu), "--out", str(out), "--json", str(tmp_path / "m.json")]) == 0
    merged = json.loads((tmp_path / "m.json").read_text())
    assert merged["missing_packages"] == {str(gelu): ["ai.onnx.Add"]}
    note = f"{gelu} has no cases of ai.onnx.Add"
    assert note in capsys.readouterr().out and note in out.read_text()
    assert "digests differ" not in out.read_text()


def test_a_shared_package_with_other_files_is_refused_by_name():
    first, second = a_report(["com.microsoft.Gelu", "ai.onnx.Add"]), a_report(["com.microsoft.Gelu"])
    second["packages"][0]["files"] = {"manifest.json": "0" * 64}
    with pytest.raises(
        ConformanceError,
        match=r"b\.json certifies other package files than a\.json .*digests "
        r"differ\) for com\.microsoft\.Gelu: .*--allow-different-packages",
    ):
        matrix.merge([("a.json", first), ("b.json", second)])
    merged = matrix.merge([("a.json", first), ("b.json", second)], allow_different_packages=True)
    assert merged["missing_packages"] == {"b.json": ["ai.onnx.Add"]}
