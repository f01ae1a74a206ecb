"""Issue 41, item 4: the merged matrix of a browser without ``shader-f16`` (Debian's Chromium on SwiftShader) and
a native column that has it. The f16 cells of the browser column used to show ``-`` (the mark of a package not in
the report, and not in the legend), ``merge`` dropped the per-column *Not runnable on this device* section, the
f32 / float64 / int32 / none rejection cells were painted "replanned" though nothing changed there, and the f16
rejection cell that took the 42 replanned calls was green.

Marked ``browsers`` (``--run-browsers``): a Chromium column and a wgpu column of Gelu (117 cases each), then the
page in headless Chromium.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.certify.conftest import open_page as _open
from tests.hostile.conftest import ROOT, make_specs, run_conformance  # noqa: F401 (a fixture)
from tests.hostile.test_broken_kernels import GELU

pytestmark = pytest.mark.browsers


def _column(tmp_path, specs, webgpu) -> dict:
    path = tmp_path / f"{webgpu}.json"
    proc = run_conformance(specs, f"--webgpu={webgpu}", f"--conformance-report={path}", timeout=600)
    assert path.exists(), (proc.stdout + proc.stderr)[-3000:]
    return json.loads(path.read_text())


def _cells(page_path) -> dict:
    """(package, variant, dtype) -> [(text, title) per column] of the page's grid, read in headless Chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless=new"])
        try:
            page = browser.new_page()
            page.goto(page_path.as_uri())
            rows = page.evaluate("""() => [...document.querySelectorAll('tr')].filter(r => r.querySelector('td.cell'))
                .map(r => [...r.children].map(td => [td.innerText, td.getAttribute('title') || '']))""")
        finally:
            browser.close()
    return {tuple(t for t, _ in row[:3]): row[3:] for row in rows}


def test_the_matrix_marks_what_a_browser_without_f16_cannot_run(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    native, browser = _column(tmp_path, specs, "wgpu"), _column(tmp_path, specs, "chromium")
    assert "shader-f16" not in browser["device"]["features"] and "shader-f16" in native["device"]["features"]
    assert {(e["variant"], e["dtype"]) for e in browser["not_runnable"]} == {("scalar", "float16"), ("vec4", "float16")}
    page, md = tmp_path / "matrix.html", tmp_path / "matrix.md"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "merge",
            str(tmp_path / "wgpu.json"),
            str(tmp_path / "chromium.json"),
            "--html",
            str(page),
            "--out",
            str(md),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    messages, errors, text, _ = _open(page)
    assert not errors and not messages, (errors, messages)
    cells = _cells(page)
    pkg = "com.microsoft.Gelu"
    for variant in ("scalar", "vec4"):
        (native_text, native_state), (browser_text, browser_state) = cells[(pkg, variant, "float16")]
        assert native_state == "conforms" and "worst" in native_text and "x allowed" in native_text
        assert browser_state == "not-runnable" and "not runnable here" in browser_text, browser_text
    for dtype in ("float16", "float32", "float64", "int32", "none"):  # nothing changed in the rejection cells
        assert [state for _, state in cells[(pkg, "rejected", dtype)]] == ["conforms", "conforms"], dtype
    rejected_f16 = [
        c
        for c in browser["cases"]
        if c["variant"] == "rejected" and c["dtype"] == "float16" and not c.get("expected_variant")
    ]
    assert cells[(pkg, "rejected", "float16")][1][0].startswith(f"{len(rejected_f16)} passed")  # not the 42
    assert "not-runnable: not runnable on this device" in text and "-: no case of this row" in text  # legend
    assert "Not runnable on this device" in text
    assert "(2) chrom" in text and "scalar / float16 (25 case(s)): call rejected (no-variant)" in text
    matrix = md.read_text()
    assert "not runnable here (25)" in matrix and "not runnable here (17)" in matrix
    assert "## Not runnable on this device" in matrix and "`-`: no case of this row" in matrix
