"""The reference loader outside browsers: Node with Dawn for Node and Deno with its wgpu, each through
``runtime_host.mjs`` (conformance/impls/js_loader/runtime.py starts it), run golden cases of the shipped packages;
the loader's plan equals the suite's, its outputs agree with the float64 reference, and a call the device cannot run
(f16 without shader-f16) is refused as the manifest says. A loader that hangs costs its case the driver's deadline
and the next case gets a fresh host; a missing runtime is one line that says to run npm ci."""

from __future__ import annotations

import math
import platform

import numpy as np
import pytest

from cases.data import make_inputs
from conformance.certify.device_truth import plan_context, plan_for_device
from conformance.engine.package import REPO_SPECS, load_package
from conformance.engine.planner import Planner
from conformance.engine.profile import KNOWN_FEATURES, LIMIT_NAMES, DeviceProfile
from conformance.impls.js_loader.plans import differences, python_result
from conformance.impls.js_loader.published import published_files
from conformance.impls.js_loader.runtime import RUNTIMES, JsRuntime, RuntimeTimeout, RuntimeUnavailable, unavailable
from conformance.ops.registry import find
from reference import compare
from tests.conftest import golden_cases

PACKAGES = [
    "com.microsoft.Gelu",
    "com.microsoft.FastGelu@2",
    "com.microsoft.LayerNormalization@2",
    "com.microsoft.Softmax",
    "ai.onnx.Add",
]
#: The most input elements of a golden case run here (each variant's smallest non-empty case is far below it).
MAX_ELEMENTS = 4096


def _need(runtime: str) -> None:
    why = unavailable(runtime)
    if why is None:
        return
    if runtime == "deno" and (platform.system(), platform.machine()) != ("Linux", "x86_64"):
        pytest.skip(f"npm's @deno/linux-x64-glibc is for Linux x86_64 only: {why}")
    pytest.fail(f"scripts/setup.sh installs both runtimes: {why}")


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime(request):
    _need(request.param)
    with JsRuntime(request.param) as rt:
        rt.start()
        yield rt


def device_profile(rt: JsRuntime) -> DeviceProfile:
    d = rt.device
    limits = {k: v for k, v in d["limits"].items() if k in LIMIT_NAMES}
    return DeviceProfile(f"{rt.runtime} device", limits=limits, features=frozenset(d["features"]) & KNOWN_FEATURES)


def chosen_cases(name: str) -> list:
    """Per dtype, each variant's first small accepted baseline case; and every package's first rejected one."""
    out, seen = [], set()
    for case in golden_cases(name):
        sizes = [math.prod(a[0]) for a in case.inputs.values() if a is not None]
        if case.profile.name != "baseline" or case.tunables or not sizes or sum(sizes) > MAX_ELEMENTS:
            continue
        key = (case.expect["outcome"], case.expect.get("variant"), next(a[1] for a in case.inputs.values() if a))
        if case.expect["outcome"] == "rejected":
            key = ("rejected",)
        elif 0 in sizes:
            continue
        if key not in seen:
            seen.add(key)
            out.append(case)
    return out


def test_device_is_described(runtime):
    d = runtime.device
    assert d["runtime"] == runtime.runtime
    assert d["adapter"]["description"] or d["adapter"]["device"], d["adapter"]
    assert d["limits"]["maxStorageBufferBindingSize"] >= 128 << 20
    assert d["limits"]["maxComputeInvocationsPerWorkgroup"] >= 256
    # the device gets shader-f16 exactly where the adapter offers it (as the page asks for it)
    assert ("shader-f16" in d["features"]) == ("shader-f16" in d["adapterFeatures"])
    assert d["webgpu"].startswith("dawn.node" if runtime.runtime == "node" else "wgpu")


@pytest.mark.parametrize("name", PACKAGES)
def test_golden_cases_agree_with_the_reference(runtime, name):
    package = load_package(REPO_SPECS / name)
    planner = Planner(package.manifest)
    record = find(package.manifest.op_id)
    runtime.kernel(name, published_files(package), package.version)
    device = device_profile(runtime)
    cases = chosen_cases(name)
    assert len(cases) >= 3, cases
    ran = 0
    for case in cases:
        case, _ = plan_for_device(case, planner, device)  # an f16 call on a device without shader-f16: refused
        inputs = make_inputs(case)
        got = runtime.run(
            name,
            inputs,
            attributes=dict(case.attributes),
            tunables=dict(case.tunables),
            limits=dict(case.profile.limits),
            features=sorted(case.profile.features),
        )
        assert got.error is None, f"{case.id}: {got.error}"
        if case.expect["outcome"] == "rejected":
            assert got.rejected is not None and got.rejected["name"] == "ContractError", (case.id, got.raw)
            assert got.rejected["reason"] == case.expect["reason"], (case.id, got.rejected)
            found = differences(case.id, python_result(planner, case), {"error": got.rejected})
            assert not found, "\n".join(f"{d.field}: suite {d.python!r}, loader {d.js!r}" for d in found[:8])
            assert got.run_rejected is not None and not got.outputs, case.id
            continue
        assert got.rejected is None, f"{case.id}: {got.rejected}"
        found = differences(case.id, python_result(planner, case), {"plan": got.plan})
        assert not found, "\n".join(f"{d.field}: suite {d.python!r}, loader {d.js!r}" for d in found[:8])
        reference = record.compute(inputs, dict(case.attributes) or None)
        plan = plan_context(planner, case)
        assert set(got.outputs) == set(case.expect["outputs"]), case.id
        for role, y in got.outputs.items():
            want = case.expect["outputs"][role]
            assert list(y.shape) == list(want["shape"]) and y.dtype.name == want["dtype"], (case.id, role)
            tolerance = record.tolerance_for(y.dtype.name, inputs, dict(case.attributes) or None, plan)
            result = compare(y, reference[role], tolerance)
            assert result.passed, f"{case.id} {role}:\n{result.message()}"
        ran += 1
    assert ran >= 2, f"{name}: only {ran} case(s) ran"


def test_large_data_travels_through_files(runtime):
    """Inputs and outputs beyond the inline limit (128 KiB) go through the scratch folder, both ways."""
    package = load_package(REPO_SPECS / "com.microsoft.Gelu")
    runtime.kernel("gelu-large", published_files(package), package.version)
    x = np.linspace(-6, 6, 1 << 16, dtype=np.float32)
    got = runtime.run("gelu-large", {"X": x})
    assert got.error is None and got.rejected is None, got.raw
    assert "file" in str(got.raw["outputs"]["Y"][2])
    record = find(package.manifest.op_id)
    reference = record.compute({"X": x}, None)
    tolerance = record.tolerance_for("float32", {"X": x}, None)
    assert compare(got.outputs["Y"], reference["Y"], tolerance).passed


HANGING = """
export async function getKernel() {
  const kernel = async () => new Promise(() => {});
  kernel.plan = async () => ({ variant: "v", passes: [], outputs: { Y: { shape: [1], dtype: "float32" } } });
  return kernel;
}
"""
SHORT = """
export async function getKernel() {
  const kernel = async () => ({ Y: { data: new Float32Array(3), shape: [4], dtype: "float32" } });
  kernel.plan = async () => ({ variant: "v", passes: [], outputs: { Y: { shape: [4], dtype: "float32" } } });
  return kernel;
}
"""


@pytest.mark.parametrize("which", RUNTIMES)
def test_a_hanging_loader_costs_its_case_the_deadline_and_the_next_case_gets_a_fresh_host(tmp_path, which):
    _need(which)
    (tmp_path / "hanging.mjs").write_text(HANGING)
    (tmp_path / "short.mjs").write_text(SHORT)
    x = np.zeros(4, np.float32)
    with JsRuntime(which, tmp_path / "hanging.mjs", timeout=3) as rt:
        rt.kernel("hang", {1: {}}, 1)
        rt.kernel("short", {1: {}}, 1, module=tmp_path / "short.mjs")
        with pytest.raises(RuntimeTimeout, match=r"no answer to a case of hang within 3 s; the host was stopped"):
            rt.run("hang", {"X": x})
        got = rt.run("short", {"X": x})  # a fresh host, the kernel loaded again
        assert rt.starts == 2
        assert got.error["message"] == "output Y: data has 3 elements, its shape [4] has 4", got.raw


@pytest.mark.parametrize("which", RUNTIMES)
def test_a_missing_runtime_is_one_line_that_says_to_run_npm_ci(tmp_path, monkeypatch, which):
    monkeypatch.setenv("CONFORMANCE_NODE_MODULES", str(tmp_path))  # an empty node_modules
    monkeypatch.delenv("CONFORMANCE_DENO", raising=False)
    monkeypatch.delenv("CONFORMANCE_WEBGPU_JS", raising=False)
    why = unavailable(which)
    assert why and "\n" not in why and "npm ci" in why, why
    with pytest.raises(RuntimeUnavailable, match="npm ci"):
        JsRuntime(which).start()
