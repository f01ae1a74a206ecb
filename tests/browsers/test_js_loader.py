"""The js-loader column in headless Chromium (SwiftShader, no shader-f16) and Firefox: planted loader bugs fail
the cases they touch naming the difference, and a loader that throws, hangs, returns wrong arrays or takes the tab
down fails only the case it was running, saying which.

Marked ``browsers`` (``--run-browsers``): each test loads a loader into a real browser page.
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading

import pytest
from playwright.sync_api import sync_playwright

from conformance.certify.checker import Checker
from conformance.certify.implementations import load_implementation
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, verdict_for
from conformance.config import REPO_LOADER
from conformance.engine.package import REPO_SPECS
from conformance.gpu.backends import chromium
from conformance.tools.export import export_package
from conformance.tools.jsjinja import locate
from tests.browsers.test_onnxruntime_web import _golden
from tests.loader.planted import ROOT, planted_loader

pytestmark = pytest.mark.browsers

WRAPPER = """import {{ getKernel as real }} from "./index.js";
export async function getKernel(source, options) {{
  const k = await real(source, options);
  const kernel = async (inputs, opts) => {{ {body} }};
  kernel.plan = k.plan;
  kernel.stats = k.stats;
  return kernel;
}}
"""
MISBEHAVING = {
    "throws": ('throw new Error("the loader fell over");', "Error: the loader fell over"),
    "hangs": ("return new Promise(() => {});", "kernel() did not settle within 20 s (the loader hangs)"),
    "short": (
        "const out = await k(inputs, opts); out.Y.data = out.Y.data.subarray(1); return out;",
        "output Y: data has 11 elements, its shape [4,3] has 12",
    ),
    "wrong-type": (
        "const out = await k(inputs, opts); out.Y.data = new Float64Array(out.Y.data); return out;",
        "output Y: data is Float64Array, not Float32Array for float32",
    ),
}
#: plant -> (file, old, new, package, case, words of the failure)
PLANTS = {
    "dispatch-split-off-by-one": (
        "layout.js",
        "const x = Math.ceil(groups / (y * z));",
        "const x = Math.floor(groups / (y * z));",
        "com.microsoft.Softmax",
        "Softmax/f32/X[5,4]/vec4@small-dispatch",
        "passes[0].dispatch.workgroups[0]: the suite plans 3, the loader 2",
    ),
    "when-out-of-priority-order": (
        "manifest.js",
        "variants.sort((a, b) => b.priority - a.priority);",
        "variants.sort((a, b) => a.priority - b.priority);",
        "com.microsoft.Gelu",
        "Gelu/f32/X[4,3]/vec4",
        "variant: the suite plans 'vec4', the loader 'scalar'",
    ),
    "uniform-field-in-wrong-slot": (
        "planner.js",
        "const fieldList = b.fields.map((f) => [f.name, f.type, fieldValue(manifest, f, scope)]);",
        "const fieldList = b.fields.map((f) => [f.name, f.type, fieldValue(manifest, f, scope)]).reverse();",
        "com.microsoft.LayerNormalization",
        "LayerNormalization/f32/X[4,3]+scale[3]+bias[3]/scalar_bias",
        "uniformBytes: the suite plans",
    ),
}


def check(impl, package_name, case_id):
    package, found = _golden(package_name)
    case = found[case_id]
    verdict = verdict_for(case)
    try:
        Checker(impl).check(case, package, verdict)
    except (CaseFailed, CaseNotApplicable) as err:
        return err
    return None


def loader_impl(module, webgpu="chromium"):
    impl = load_implementation(f"js-loader:{module}", webgpu=webgpu)
    assert impl.available() is None, impl.available()
    return impl


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_loader_bug_fails_its_case_naming_the_difference(tmp_path, plant):
    file, old, new, package, case_id, words = PLANTS[plant]
    impl = loader_impl(planted_loader(tmp_path, file, old, new) / "src" / "index.js")
    err = check(impl, package, case_id)
    assert isinstance(err, CaseFailed) and "kernel.plan() differs from the suite's plan" in str(err), err
    assert words in str(err), str(err)


@pytest.mark.parametrize("behaviour", sorted(MISBEHAVING))
def test_a_misbehaving_loader_fails_only_the_case_it_ran(tmp_path, behaviour):
    body, words = MISBEHAVING[behaviour]
    root = planted_loader(tmp_path, "index.js", "export { ContractError", "export { ContractError")
    (root / "src" / "bad.mjs").write_text(WRAPPER.format(body=body))
    impl = loader_impl(root / "src" / "bad.mjs")
    err = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")
    assert isinstance(err, CaseFailed) and words in str(err), str(err)
    # a rejection is still judged (kernel.plan is the reference's), and the page goes on serving cases
    assert check(impl, "com.microsoft.Gelu", "Gelu/f64/X[4,3]/reject-dtype") is None


def test_a_loader_that_takes_the_tab_down_fails_that_case_and_the_next_gets_a_fresh_page(tmp_path):
    root = planted_loader(tmp_path, "index.js", "export { ContractError", "export { ContractError")
    (root / "src" / "bad.mjs").write_text(
        WRAPPER.format(body="if (inputs.X.shape[0] === 4) for (;;) {} return k(inputs, opts);")
    )
    impl = loader_impl(root / "src" / "bad.mjs")
    err = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")
    assert isinstance(err, CaseFailed) and "loaderRun" in str(err), str(err)
    assert check(impl, "com.microsoft.Gelu", "Gelu/f32/X[5]/scalar") is None


def test_f16_bits_read_as_f32_fail_the_f16_cases_on_firefox(tmp_path):
    """Firefox has shader-f16 here: the f16 cases run, and an f16 output handed back as a Float32Array fails."""
    root = planted_loader(
        tmp_path,
        "tensors.js",
        "return HAS_F16 ? new globalThis.Float16Array(copy) : new Uint16Array(copy);",
        "return new Float32Array(copy.byteLength % 4 ? copy.slice(0, copy.byteLength - 2) : copy);",
    )
    impl = loader_impl(root / "src" / "index.js", webgpu="firefox")
    assert "shader-f16" in impl.profile.features, "this test needs Firefox's shader-f16"
    err = check(impl, "com.microsoft.Gelu", "Gelu/f16/X[8]/vec4")
    assert isinstance(err, CaseFailed), err
    assert "output Y: data is Float32Array, not Float16Array or Uint16Array for float16" in str(err), str(err)
    assert check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4") is None


def test_the_cards_three_lines_run_in_chromium_as_docs_js_loader_md_writes_them(tmp_path):
    """The page of docs/manual/js-loader.md ("Load in JavaScript"), byte for byte, against what `export` writes, served
    over HTTP from a directory laid out as the checkout: it logs Y's shape, dtype and values."""
    doc = (ROOT / "docs" / "manual" / "js-loader.md").read_text()
    page = re.search(r"```html\n(.*?)```", doc, re.S).group(1)
    for name in ("com.microsoft.FastGelu", "com.microsoft.FastGelu@2"):
        shutil.copytree(REPO_SPECS / name, tmp_path / "specs" / name)
        export_package(tmp_path / "specs" / name)
    (tmp_path / "loader").symlink_to(REPO_LOADER, target_is_directory=True)
    jinja_dir, _ = locate()
    (tmp_path / "node_modules" / "@huggingface").mkdir(parents=True)
    (tmp_path / "node_modules" / "@huggingface" / "jinja").symlink_to(jinja_dir, target_is_directory=True)
    (tmp_path / "page.html").write_text("<!doctype html><meta charset=utf-8>" + page)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium.CHROMIUM, headless=True, args=list(chromium.FLAGS))
            try:
                tab = browser.new_page()
                errors = []
                tab.on("pageerror", lambda e: errors.append(str(e)))
                with tab.expect_console_message(lambda m: m.type == "log", timeout=60_000) as logged:
                    tab.goto(f"http://127.0.0.1:{server.server_address[1]}/page.html")
                args = [a.json_value() for a in logged.value.args]
                assert not errors, errors
            finally:
                browser.close()
    finally:
        server.shutdown()
    shape, dtype, data = args
    assert shape == [5] and dtype == "float32"
    values = list(data.values()) if isinstance(data, dict) else data
    # FastGelu (tanh approximation): -2 -> -0.0454, -1 -> -0.1588, 0 -> 0, 1 -> 0.8412, 2 -> 1.9546
    assert [round(v, 3) for v in values] == [-0.045, -0.159, 0.0, 0.841, 1.955], values
