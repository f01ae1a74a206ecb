"""ONNX Runtime Web's two WebGPU providers in headless Chromium (SwiftShader, no shader-f16), through the one page
runtime: the provider that ran each node is reported and a CPU fallback fails; the issue's three findings are
found; a console line comes with the verdict it belongs to; a standalone repro page shows the same failure alone.

Marked ``browsers`` (``--run-browsers``): each loads ORT Web (tens of MB of WebAssembly) into a page.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from playwright.sync_api import sync_playwright

from cases.golden import CASES_DIR, load_matching_golden
from conformance.certify.checker import Checker
from conformance.certify.implementations import Rejected, load_implementation
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, verdict_for
from conformance.engine.package import load_package
from conformance.gpu.backends import chromium
from conformance.impls.onnxruntime.web import OrtWeb, ProviderFallback, ort_dist
from conformance.ops import record_for

pytestmark = pytest.mark.browsers


@functools.lru_cache(maxsize=None)
def _golden(name):
    package = load_package(name)
    found, why = load_matching_golden(CASES_DIR, package)
    assert found is not None, why
    return package, {c.id: c for c in found}


@functools.lru_cache(maxsize=None)
def _impl(name):
    impl = load_implementation(name, webgpu="chromium")
    assert impl.available() is None, impl.available()
    return impl


def check(impl_name, package_name, case_id):
    """(verdict, the raised outcome or None) of one golden case through the named implementation; a failure
    carries its ``repro.Failure`` (as under --repro-dir)."""
    package, found = _golden(package_name)
    case = found[case_id]
    verdict = verdict_for(case)
    try:
        Checker(_impl(impl_name), repros=True).check(case, package, verdict)
    except (CaseFailed, CaseNotApplicable) as err:
        return verdict, err
    return verdict, None


@pytest.mark.parametrize(
    "impl,provider", [("onnxruntime-web", "WebGpuExecutionProvider"), ("onnxruntime-web-jsep", "JsExecutionProvider")]
)
def test_each_case_reports_the_provider_of_every_node_and_its_cost(impl, provider):
    verdict, err = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[64,36]/vec4#normal1")
    assert err is None and verdict.checks["values"] == "passed"
    assert verdict.impl["provider"] == provider
    assert verdict.impl["placements"] == {provider: 1}  # from ORT's own session log, nothing else
    assert verdict.impl["round_trips"] == 1 and verdict.impl["run_ms"] is not None
    assert verdict.as_dict()["impl"]["placements"] == {provider: 1}


def test_a_new_session_releases_the_pages_earlier_ones_and_a_repeated_call_reuses_its_own():
    impl = _impl("onnxruntime-web")
    first, err = check("onnxruntime-web", "com.microsoft.Gelu", "Gelu/f32/X[64,36]/vec4#normal1")
    assert err is None
    again, err = check("onnxruntime-web", "com.microsoft.Gelu", "Gelu/f32/X[64,36]/vec4#normal1")
    assert err is None and again.impl["session_reused"] is True
    names = [e["name"] for e in impl._sessions.values() if "name" in e]
    assert len(names) == 1
    other, err = check("onnxruntime-web", "com.microsoft.FastGelu", "FastGelu/f32/X[2,8]+bias[8]/vec4_bias")
    assert other.impl["session_reused"] is False
    live = [e["name"] for e in impl._sessions.values() if "name" in e]
    assert len(live) == 1 and live != names  # one live session, the new one
    gone = impl.call(impl._page, ["ortRun", 0, names[0], {}])
    assert "no session" in gone["error"]  # and the page let the old one go


def test_jsep_keeps_every_session_of_the_package_it_runs():
    impl = _impl("onnxruntime-web-jsep")
    for case_id in ("FastGelu/f32/X[2,8]+bias[8]/vec4_bias", "FastGelu/f32/X[4]/vec4_no_bias"):
        _, err = check("onnxruntime-web-jsep", "com.microsoft.FastGelu", case_id)
        assert err is None
    live = [e["name"] for e in impl._sessions.values() if "name" in e]
    assert len(live) == 2  # with bias and without
    again, _ = check("onnxruntime-web-jsep", "com.microsoft.FastGelu", "FastGelu/f32/X[2,8]+bias[8]/vec4_bias")
    assert again.impl["session_reused"] is True


@pytest.mark.parametrize(
    "impl,op", [("onnxruntime-web-jsep", "com.microsoft.Softmax"), ("onnxruntime-web", "com.microsoft.Gelu")]
)
def test_a_node_the_provider_does_not_take_fails_as_a_cpu_fallback_never_a_rejection(impl, op):
    """Neither provider has float64 kernels: with fallback disabled the session fails (JSEP: "fallback to CPU EP has
    been explicitly disabled"; the C++ provider: the Mul its optimizer made of Gelu has no provider), and that is
    a failure naming the CPU, never a Rejected (which would pass every rejection case)."""
    case = SimpleNamespace(package=op, attributes={})
    with pytest.raises(ProviderFallback, match="would run on the CPU") as err:
        _impl(impl).run(case, {"X": np.linspace(-1, 1, 8)})
    assert not isinstance(err.value, Rejected)
    # through the checker, on the manifest's own f64 rejection case: a failure, not "rejected, as the manifest does"
    name = op.rsplit(".", 1)[1]
    verdict, err = check(impl, op, f"{name}/f64/X[4,3]/reject-dtype")
    assert isinstance(err, CaseFailed) and "ProviderFallback" in str(err) and "would run on the CPU" in str(err)


class _Placed(OrtWeb):
    """ORT Web's C++ provider, but certified as if it had to be JSEP: every node is off the provider asked for."""

    provider = "JsExecutionProvider"


def test_nodes_placed_off_the_provider_fail_the_case_that_would_pass():
    package, found = _golden("com.microsoft.Gelu")
    case = found["Gelu/f32/X[64,36]/vec4#normal1"]
    with pytest.raises(CaseFailed, match=r"placed nodes off JsExecutionProvider \(1 on WebGpuExecutionProvider\)"):
        Checker(_Placed(webgpu="chromium")).check(case, package, verdict_for(case))


@pytest.mark.parametrize("impl", ["onnxruntime-web", "onnxruntime-web-jsep"])
def test_a_bias_of_the_wrong_length_is_accepted_a_divergence(impl):
    verdict, err = check(impl, "com.microsoft.FastGelu", "FastGelu/f32/X[2,8]+bias[7]/reject-no-variant")
    assert isinstance(err, CaseFailed) and err.divergence == "accepts-rejected"
    assert "accepts a call the manifest rejects" in str(err)


def test_softmax_over_an_empty_tensor_fails_on_the_cpp_provider_only():
    verdict, err = check("onnxruntime-web", "com.microsoft.Softmax", "Softmax/f32/X[2,0]/vec4")
    assert isinstance(err, CaseFailed) and err.divergence == "rejects-accepted", err
    verdict, err = check("onnxruntime-web-jsep", "com.microsoft.Softmax", "Softmax/f32/X[2,0]/vec4")
    assert err is None and verdict.evidence == "shapes"


def test_jsep_f16_without_shader_f16_returns_zeros_with_the_console_line_attached():
    assert "shader-f16" not in _impl("onnxruntime-web-jsep").device_features  # SwiftShader
    verdict, err = check("onnxruntime-web-jsep", "com.microsoft.Gelu", "Gelu/f16/X[2,2,2,2,2,4]/vec4")
    assert isinstance(err, CaseFailed) and err.divergence is None and verdict.checks["values"] == "failed"
    assert "differs from the reference" in str(err)
    line = "'f16' type used without 'f16' extension enabled"
    assert any(line in text for text in verdict.impl["console"])
    assert "the page's console said" in str(err) and line in str(err)
    # the C++ provider refuses the same call clearly: on this device that is not applicable, not a failure
    verdict, err = check("onnxruntime-web", "com.microsoft.Gelu", "Gelu/f16/X[2,2,2,2,2,4]/vec4")
    assert isinstance(err, CaseNotApplicable) and "without shader-f16" in str(err)
    assert "requires f16 but the device does not support it" in str(err)


# -- the standalone repro page ---------------------------------------------------------------------------
def _failure(impl, package_name, case_id, kind):
    """A repro.Failure-like record of a call ORT Web answers correctly (the checker makes none for a pass)."""
    package, found = _golden(package_name)
    case = found[case_id]
    inputs = Checker(impl).inputs_for(case)
    record = record_for(case.package)
    try:
        result = impl.run(case, dict(inputs))
        observed = {"outcome": "accepted", "outputs": dict(result.outputs)}
    except Rejected as err:
        observed = {"outcome": "rejected", "message": str(err)}
    if case.accepted:
        expected = {"outcome": "accepted", "outputs": record.compute(inputs, None), "tolerance": "the op record's"}
    else:
        expected = {"outcome": "rejected", "reason": case.expect["reason"]}
    return SimpleNamespace(
        kind=kind,
        verdict=f"{case_id}: {kind} ({impl.name})",
        case_id=case_id,
        package=case.package,
        inputs=inputs,
        attributes={},
        expected=expected,
        observed=observed,
    )


@pytest.fixture(scope="module")
def repro_server(tmp_path_factory):
    """A plain HTTP server on 127.0.0.1 over a directory holding ``ort`` (ORT Web's dist/): what a reader runs."""
    root = tmp_path_factory.mktemp("repros")
    os.symlink(ort_dist(), root / "ort")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.func.extensions_map = {
        **handler.func.extensions_map,
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
    }
    handler.func.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _open(url: str, flags=chromium.FLAGS) -> str:
    """The title a repro page ends with in headless Chromium (PASS or FAIL: why); ``flags`` without the WebGPU
    ones: a browser that offers no WebGPU."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium.CHROMIUM, headless=True, args=list(flags))
        try:
            page = browser.new_page()
            page.goto(url)
            page.wait_for_function("document.title !== 'running'", timeout=120_000)
            return page.title()
        finally:
            browser.close()


def _write(root: Path, name: str, files: dict) -> Path:
    assert next(iter(files)) == "index.html"
    (root / name).mkdir()
    for rel, data in files.items():
        (root / name / rel).write_bytes(data)
    return root / name


@pytest.mark.parametrize(
    "impl_name,package,case_id,kind,why",
    [
        (
            "onnxruntime-web-jsep",
            "com.microsoft.Gelu",
            "Gelu/f16/X[2,2,2,2,2,4]/vec4",
            "values",
            "elements outside the allowed error",
        ),
        (
            "onnxruntime-web",
            "com.microsoft.FastGelu",
            "FastGelu/f32/X[2,8]+bias[7]/reject-no-variant",
            "accepts-rejected",
            "accepts a call that must be rejected",
        ),
    ],
)
def test_the_repro_page_shows_the_same_failure_with_ort_web_alone(repro_server, impl_name, package, case_id, kind, why):
    root, base = repro_server
    impl = _impl(impl_name)
    _, err = check(impl_name, package, case_id)
    failure = err.failure  # what --repro-dir hands the implementation (repro.Failure)
    assert failure is not None and failure.kind == kind
    directory = _write(root, f"{impl_name}-{kind}", impl.repro_files(failure))
    assert {"index.html", "model.onnx", "case.json", "README.md"} <= {p.name for p in directory.iterdir()}
    # ORT Web beside the page (../ort from the case's directory), named by the ?ort= parameter
    title = _open(f"{base}/{directory.name}/index.html?ort={base}/ort/")
    assert title.startswith("FAIL") and why in title, title


def test_a_repro_of_a_call_ort_web_gets_right_passes(repro_server):
    """The page's check is not FAIL by construction: the same page for a call ORT Web answers correctly says PASS."""
    root, base = repro_server
    impl = _impl("onnxruntime-web")
    failure = _failure(impl, "com.microsoft.Gelu", "Gelu/f32/X[64,36]/vec4#normal1", "values")
    directory = _write(root, "passing", impl.repro_files(failure))
    os.symlink(root / "ort", directory / "ort")  # the default: ./ort/ beside the page
    assert _open(f"{base}/{directory.name}/index.html") == "PASS"


def test_the_web_implementations_need_a_browser_column():
    impl = load_implementation("onnxruntime-web", webgpu="wgpu")
    assert "runs in a browser" in impl.available() and "--webgpu=chromium" in impl.available()
