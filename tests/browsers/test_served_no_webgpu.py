"""Issue 41, item 5: a browser without WebGPU opened at the served URL is told so, on the page and in the terminal,
with how to turn WebGPU on in that browser; it used to read "verdict: does-not-conform (1 not-run)" on the page,
the reason (``requestAdapter() returned null``) only in the server's terminal.

Marked ``browsers`` (``--run-browsers``): a real headless Chromium without ``--enable-unsafe-webgpu`` (on Linux
its requestAdapter() answers null), driven by Playwright only to read the page.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import sync_playwright

from conformance.gpu.backends import chromium
from conformance.gpu.backends.enable_webgpu import how_to_enable
from tests.browsers.conftest import serve
from tests.hostile.conftest import make_specs  # noqa: F401 (a fixture)
from tests.hostile.test_broken_kernels import GELU

pytestmark = pytest.mark.browsers
CASE = "Gelu/f32/X[0,3]/scalar"


def test_a_browser_without_webgpu_is_told_so_and_how_to_turn_it_on(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    proc, url, head = serve(specs, "--columns", "1", "--cases", CASE, "--report", str(tmp_path / "out"))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium.CHROMIUM, headless=True, args=["--no-sandbox"]
            )  # no --enable-unsafe-webgpu
            try:
                page = browser.new_page()
                page.goto(url)
                page.wait_for_function("document.getElementById('verdict').textContent !== ''", timeout=120_000)
                verdict = page.inner_text("#verdict")
                agent = page.evaluate("navigator.userAgent")
            finally:
                browser.close()
        text = "".join(head) + proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    assert verdict.startswith("verdict: does-not-conform (1 not-run): this browser offers no WebGPU"), verdict
    assert "requestAdapter() returned null" in verdict and "the kernels are not at fault" in verdict, verdict
    assert "--enable-unsafe-webgpu" in verdict and "chrome://flags/#enable-unsafe-webgpu" in verdict, verdict
    assert "about:config" not in verdict  # this browser's way, not every browser's
    assert how_to_enable(agent) in verdict
    assert "this browser offers no WebGPU (" in text and "--enable-unsafe-webgpu" in text, text[-3000:]
    assert proc.returncode == 1
