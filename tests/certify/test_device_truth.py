"""Verdicts for the device under test, three WebGPU implementations, and reports merged into a matrix."""

import json
import shutil
import subprocess
import sys

import pytest

from conformance.certify import report
from conformance.certify.device_truth import plan_for_device
from conformance.certify.report import matrix
from conformance.engine.package import load_package
from conformance.engine.planner import Planner
from conformance.engine.profile import BASELINE, DeviceProfile
from tests.certify.conftest import REPO
from tests.conftest import UNUSED_PLUGINS, golden_cases

NO_F16 = DeviceProfile("a device without shader-f16", features=frozenset())


def test_a_profile_within_a_device_keeps_the_stricter_limit_and_the_shared_features():
    small = DeviceProfile(
        "small",
        limits={"maxComputeWorkgroupsPerDimension": 16, "minStorageBufferOffsetAlignment": 64},
        features=frozenset({"shader-f16"}),
    )
    device = DeviceProfile(
        "device",
        limits={"maxComputeWorkgroupsPerDimension": 8, "minStorageBufferOffsetAlignment": 32},
        features=frozenset(),
    )
    within = small.within(device)
    assert within.limits["maxComputeWorkgroupsPerDimension"] == 8
    assert within.limits["minStorageBufferOffsetAlignment"] == 64
    assert within.features == frozenset() and not within.exceeds(device)


def test_an_f16_call_is_planned_for_a_device_without_shader_f16_as_the_manifest_says():
    package = load_package("com.microsoft.Gelu")
    planner = Planner(package.manifest)
    f16 = [
        c for c in golden_cases(package.name) if c.accepted and c.profile == BASELINE and c.inputs["X"][1] == "float16"
    ]
    assert f16
    moved, change = plan_for_device(f16[0], planner, NO_F16)
    assert moved.expect["outcome"] == "rejected" and moved.expect["reason"] == "no-variant"
    assert all("f16Ok(dtypes.T) is false" in why for why in moved.expect["detail"].values()), moved.expect
    assert "device lacks feature shader-f16" in change and "rejected" in change
    f32 = next(c for c in golden_cases(package.name) if c.accepted and c.inputs["X"][1] == "float32")
    assert plan_for_device(f32, planner, BASELINE) == (f32, None)


#: The packages the selections below reach ("Gelu/f32/X[5]" is also FastGelu's): a run certifies these two, not
#: every package of specs/ (their golden files still come from cases/, digests checked).
PACKAGES = ("com.microsoft.Gelu", "com.microsoft.FastGelu")


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("specs")
    for name in PACKAGES:
        shutil.copytree(REPO / "specs" / name, root / name)
    return root


def _run(tmp_path, name, specs, *args):
    report = tmp_path / f"{name}.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO / "conformance" / "test_kernels.py"),
        "-q",
        "-p",
        "no:cacheprovider",
        *UNUSED_PLUGINS,
        f"--specs={specs}",
        f"--conformance-report={report}",
        *args,
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return report, json.loads(report.read_text()), proc.stdout


@pytest.mark.slow
def test_gl_without_shader_f16_asserts_the_f16_rejections_and_skips_nothing(tmp_path, specs):
    _, data, out = _run(tmp_path, "gl", specs, "--device=gl", "-k", "Gelu/f16/X[5] or Gelu/f32/X[5]")
    assert data["device"]["backend"] == "OpenGL" and "shader-f16" not in data["device"]["features"]
    assert data["totals"]["skipped"] == 0 and data["totals"]["passed"] >= 4
    f16 = [c for c in data["cases"] if c["dtype"] == "float16"]
    assert f16 and all(
        c["variant"] == "rejected" and "device lacks feature shader-f16" in c["replanned"]
        for c in f16
        if c["id"].split("@")[0].endswith("]")
    ), f16
    assert "planned for this device" in out


@pytest.fixture(scope="module")
def implementation_report(tmp_path_factory, specs):
    """``report(webgpu)``: the report's path of one run of that WebGPU implementation on the same device, made once
    per process and shared by the two tests below (a run is a pytest process, and a browser for chromium)."""
    root, made = tmp_path_factory.mktemp("implementations"), {}

    def report(webgpu):
        if webgpu not in made:
            made[webgpu] = _run(
                root, webgpu, specs, f"--webgpu={webgpu}", "-k", "Gelu/f16/X[5] or Gelu/f32/X[5] or FastGelu/f16/X[4]"
            )[0]
        return made[webgpu]

    return report


@pytest.mark.slow
@pytest.mark.parametrize("webgpu", ["dawn", "chromium"])
def test_the_other_webgpu_implementations_certify_the_same_cases(implementation_report, webgpu):
    data = json.loads(implementation_report(webgpu).read_text())
    assert data["device"]["webgpu"] == webgpu and data["conforms"] and data["totals"]["passed"] >= 3


@pytest.mark.slow
def test_reports_of_three_implementations_merge_into_a_matrix_and_other_packages_are_refused(
    tmp_path, implementation_report
):
    paths = [shutil.copy(implementation_report(w), tmp_path / f"{w}.json") for w in ("wgpu", "dawn", "chromium")]
    out = tmp_path / "matrix.md"
    cmd = [
        sys.executable,
        "-m",
        "conformance",
        "merge",
        *map(str, paths),
        "--out",
        str(out),
        "--json",
        str(tmp_path / "matrix.json"),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    assert [c["webgpu"] for c in matrix["columns"]] == ["wgpu", "dawn", "chromium"]
    assert "| com.microsoft.Gelu | rejected | float16 |" in out.read_text()  # SwiftShader: f16 asserted rejected
    other = json.loads(paths[1].read_text())
    other["packages"][0]["files"] = {"manifest.json": "0" * 64}
    paths[1].write_text(json.dumps(other))
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "digests differ" in proc.stderr and "--allow-different-packages" in proc.stderr


@pytest.mark.slow
def test_every_device_and_implementation_is_a_column_of_one_report(tmp_path, specs):
    report = tmp_path / "all.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO / "conformance" / "test_kernels.py"),
        "-q",
        "-p",
        "no:cacheprovider",
        *UNUSED_PLUGINS,
        f"--specs={specs}",
        "--device=all",
        "--webgpu=all",
        "-k",
        "Gelu/f16/X[5] or Gelu/f32/X[5]",
        f"--conformance-report={report}",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    data = json.loads(report.read_text())
    slugs = sorted(c["column"] for c in data["columns"])
    assert slugs == [
        "chromium-vulkan-swiftshader",
        "dawn-vulkan-llvmpipe",
        "firefox-vulkan-fallback",
        "wgpu-gl-llvmpipe",
        "wgpu-vulkan-llvmpipe",
    ], slugs
    assert all(c["conforms"] and c["totals"]["passed"] >= 3 for c in data["columns"])
    assert len(data["matrix"]["columns"]) == 5
    assert report.with_suffix(".md").read_text().startswith("# Conformance matrix")
    assert "left out: dawn: llvmpipe" in proc.stdout  # Dawn's GL adapters are compatibility-mode only


@pytest.mark.slow
def test_a_column_that_cannot_certify_is_one_clear_error_not_a_failure_per_case(tmp_path, specs):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO / "conformance" / "test_kernels.py"),
        "-q",
        "-p",
        "no:cacheprovider",
        *UNUSED_PLUGINS,
        f"--specs={specs}",
        "--device=metal",
        "--webgpu=all",
        "-k",
        "Gelu/f32/X[5]",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and " failed" not in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
    for webgpu in ("wgpu", "dawn", "chromium", "firefox"):
        assert f"column {webgpu}-metal: ERROR: no {webgpu} adapter for --device=metal" in proc.stdout


def test_cases_whose_outcome_differs_between_columns_are_listed_as_findings():
    def column(status_of_b):
        verdicts = [
            {
                "id": "A",
                "package": "p",
                "variant": "v",
                "dtype": "float32",
                "family": "f",
                "status": "passed",
                "detail": "",
            },
            {
                "id": "B",
                "package": "p",
                "variant": "v",
                "dtype": "float32",
                "family": "f",
                "status": status_of_b,
                "detail": "WGSL compilation failed:\nline 3" if status_of_b == "failed" else "",
            },
        ]
        return report.build(
            verdicts,
            identity=[],
            device={"adapter": "x"},
            implementation="manifest-runtime",
            skipped_reasons={},
            deselected_heavy=0,
        )

    naga, tint = column("passed"), column("failed")
    found = matrix.disagreements([naga, tint])
    assert [d["id"] for d in found] == ["B"]
    assert found[0]["columns"] == {
        0: {"status": "passed", "detail": []},
        1: {"status": "failed", "detail": ["WGSL compilation failed:"]},
    }
    assert matrix.disagreements([naga, {**tint, "error": "no device"}]) == []  # an unusable column: one error
    text = matrix.markdown(matrix.merge([("a.json", naga), ("b.json", tint)]))
    assert "## Where the columns disagree (1 case(s))" in text and "`B`: (1) passed; (2) failed" in text
