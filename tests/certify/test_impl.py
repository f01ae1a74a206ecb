"""The implementation interface, the registry, and the ONNX Runtime implementations on a subset of the cases."""

import numpy as np
import pytest

from conformance.certify.checker import Checker
from conformance.certify.implementations import Implementation, ImplResult, Rejected, load_implementation, registered
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, CaseSkipped, verdict_for
from conformance.engine.package import REPO_SPECS, load_package
from conformance.errors import ConformanceError
from reference import reference_for
from tests.conftest import golden_cases


@pytest.fixture(scope="module")
def packages():
    return {name: load_package(name) for name in ("com.microsoft.FastGelu", "com.microsoft.Gelu")}


@pytest.fixture(scope="module")
def generated(packages):
    return {name: {c.id: c for c in golden_cases(name)} for name in packages}


def test_builtins_are_registered_and_follow_the_protocol():
    names = registered()
    assert {"manifest", "onnxruntime-cpu", "onnxruntime-webgpu"} <= set(names)
    for name in ("manifest", "onnxruntime-cpu", "onnxruntime-webgpu"):
        assert isinstance(load_implementation(name), Implementation)


def test_unknown_implementation_names_the_known_ones():
    with pytest.raises(ConformanceError, match="onnxruntime-cpu.*conformance.implementations"):
        load_implementation("no-such-impl")


class Modulo:
    """A toy outside implementation: no variants, accepts any bias and indexes it modulo its length."""

    name, has_variants = "modulo", False

    def available(self):
        return None

    def prepare(self, package):
        pass

    def run(self, case, inputs):
        x, b = inputs["X"], inputs.get("bias")
        if x is None or x.ndim == 0:
            raise Rejected("needs X of rank >= 1")
        z = x.astype(np.float64)
        if b is not None and b.size:
            z = z + np.resize(b.astype(np.float64).ravel(), x.shape[-1])
        return ImplResult(
            {"Y": reference_for("com.microsoft", case.package.split(".")[-1]).activation(z).astype(x.dtype)}
        )


def _check(impl, package, case):
    checker = Checker(impl)
    verdict = verdict_for(case)
    checker.check(case, package, verdict)
    return verdict


def test_outside_impl_variant_is_not_applicable_and_divergences_are_named(packages, generated):
    pkg, gen = packages["com.microsoft.FastGelu"], generated["com.microsoft.FastGelu"]
    verdict = _check(Modulo(), pkg, gen["FastGelu/f32/X[2,8]+bias[8]/vec4_bias"])
    assert verdict.checks == {
        "contract": "passed",
        "variant": "not-applicable",
        "dispatch": "not-applicable",
        "outputs": "passed",
        "values": "passed",
    }
    with pytest.raises(CaseFailed, match="accepts a call the manifest rejects.*bias indexed modulo") as err:
        _check(Modulo(), pkg, gen["FastGelu/f32/X[2,8]+bias[2]/reject-no-variant"])
    assert err.value.divergence == "accepts-rejected"
    with pytest.raises(CaseNotApplicable, match="only under profile 'no-f16'"):
        _check(Modulo(), pkg, gen["FastGelu/f16/X[8]/reject-no-variant@no-f16"])


@pytest.mark.onnxruntime
def test_ort_cpu_on_a_subset(packages, generated):
    ort = load_implementation("onnxruntime-cpu")
    assert ort.available() is None
    gelu, fast = generated["com.microsoft.Gelu"], generated["com.microsoft.FastGelu"]
    for cid in (
        "Gelu/f32/X[64,36]/vec4#normal1",
        "Gelu/f16/X[3,13]/scalar#special",
        "Gelu/f32/X[]/scalar",
        "Gelu/f32/X[2,3,0]/scalar",
    ):
        assert _check(ort, packages["com.microsoft.Gelu"], gelu[cid]).checks["values"] == "passed", cid
    for cid in ("FastGelu/f32/X[4,3]+bias[4]/reject-no-variant", "FastGelu/f32/X[]/reject-no-variant"):
        assert _check(ort, packages["com.microsoft.FastGelu"], fast[cid]).checks == {"contract": "passed"}
    # its f16 FastGelu is a function body with numpy broadcasting: it takes a rank-0 X and a 2-D bias
    for cid in ("FastGelu/f16/X[]/reject-no-variant", "FastGelu/f16/X[4,3]+bias[1,3]/reject-no-variant"):
        with pytest.raises(CaseFailed, match="accepts a call the manifest rejects") as err:
            _check(ort, packages["com.microsoft.FastGelu"], fast[cid])
        assert err.value.divergence == "accepts-rejected"


@pytest.mark.onnxruntime
def test_ort_webgpu_is_skipped_with_a_reason_here(packages, generated):
    impl = load_implementation("onnxruntime-webgpu")
    reason = impl.available()
    if reason is None:
        pytest.skip("this machine runs ONNX Runtime's WebGPU EP")
    assert "WebGpuExecutionProvider" in reason
    with pytest.raises(CaseSkipped, match="WebGpuExecutionProvider"):
        _check(impl, packages["com.microsoft.Gelu"], generated["com.microsoft.Gelu"]["Gelu/f32/X[8]/vec4"])


@pytest.mark.slow
@pytest.mark.onnxruntime
def test_plugin_runs_ort_cpu_and_reports_assertions(tmp_path):
    import json

    from tests.certify.conftest import run_conformance  # noqa: E402  (tests/certify/conftest.py)

    report = tmp_path / "r.json"
    proc = run_conformance(
        "--impl=onnxruntime-cpu",
        f"--specs={REPO_SPECS / 'com.microsoft.Gelu'}",
        "-k",
        "Gelu/f32",
        f"--conformance-report={report}",
    )  # one package: its f32 cases
    assert proc.returncode == 0, proc.stdout[-3000:]
    data = json.loads(report.read_text())
    assert data["implementation"] == "onnxruntime-cpu"
    assert data["checks"]["variant"]["not-applicable"] > 10 and data["checks"]["variant"]["passed"] == 0
    assert data["totals"]["not-applicable"] >= 1 and data["totals"]["failed"] == 0
    assert "## Assertions" in report.with_suffix(".md").read_text()
