"""The HTML report (``--conformance-report`` writes ``.html`` beside the JSON; ``merge --html``): one
self-contained page, opened in Debian's headless Chromium, with no console error and every failure of a planted
broken package shown with its message, worst elements, plot and rerun command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conformance.certify.report import html as report_html
from conformance.engine.package import REPO_SPECS
from tests.certify.conftest import REPO, run_conformance
from tests.certify.conftest import open_page as _open

GELU = "com.microsoft.Gelu"
TEMPLATE = "elementwise-bias-gelu.wgsl.jinja"
SELECT = "Gelu/f32/X[5] or Gelu/f32/X[7] or Gelu/f32/X[8]"  # scalar, scalar, vec4


def _broken_gelu(tmp_path):
    """Gelu whose scalar variant computes a wrong value in its last element, and whose vec4 variant is right."""
    specs = tmp_path / "specs"
    shutil.copytree(REPO_SPECS / GELU, specs / GELU)
    template = specs / GELU / TEMPLATE
    text = template.read_text()
    anchor = "  if (i >= params.count) { return; }\n"
    assert anchor in text
    template.write_text(
        text.replace(anchor, anchor + "{% if not vec4 %}  if (i + 1u == params.count) { return; }\n{% endif %}")
    )
    return specs


@pytest.mark.slow
def test_a_failing_run_writes_a_page_with_every_failure_and_no_console_error(tmp_path):
    specs = _broken_gelu(tmp_path)
    report = tmp_path / "out" / "r.json"
    proc = run_conformance(f"--specs={specs}", "-k", SELECT, f"--conformance-report={report}")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(report.read_text())
    failed = [c for c in data["cases"] if c["status"] == "failed"]
    assert failed and all(c["variant"] == "scalar" for c in failed), [c["id"] for c in failed]
    page = report.with_suffix(".html")
    messages, errors, text, svgs = _open(page, screenshot=os.environ.get("CONFORMANCE_HTML_SCREENSHOT"))
    assert not errors and not messages, (errors, messages)  # no console output, no request anywhere
    assert f"{len(failed)} failing case(s)" in text and "does-not-conform" in text
    for case in failed:
        assert case["id"] in text  # each failure, with its details:
        assert case["rerun"] in text and "worst elements" in text  # rerun command, worst elements table
        assert case["error_profile"]["profile"][-1] > 1  # the last element is the wrong one
    assert svgs >= len(failed)  # a plot per value failure
    assert "Mesa" in text or "llvmpipe" in text  # the column's device


def test_the_grid_shows_each_state_in_its_colour():
    cases = [
        {"id": "a", "package": "P", "variant": "v", "dtype": "float32", "status": "passed"},
        {
            "id": "b",
            "package": "P",
            "variant": "v",
            "dtype": "float16",
            "status": "passed",
            "replanned": "f16 call rejected: device lacks feature shader-f16",
        },
        {
            "id": "c",
            "package": "P",
            "variant": "w",
            "dtype": "float32",
            "status": "failed",
            "divergence": "accepts-rejected",
            "detail": "accepted",
        },
        {"id": "d", "package": "Q", "variant": "v", "dtype": "float32", "status": "not-applicable"},
        {
            "id": "e",
            "package": "Q",
            "variant": "w",
            "dtype": "float32",
            "status": "failed",
            "detail": "<script>alert(1)</script>",
            "error_profile": {"role": "Y", "shape": [3], "profile": [0.5, None, 40.0]},
        },
    ]
    text = report_html.page([{"implementation": "x", "result": "does-not-conform", "cases": cases}])
    for state in ("conforms", "replanned", "divergence", "not-applicable", "failed"):
        colour = report_html.STATES[state][0] + (";color:#fff" if state in report_html.DARK else "")
        assert f'background:{colour}" title="{state}"' in text, state
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text  # quoted, never run
    assert text.count("<rect") == 1 + 3 and "non-finite" in text  # the frame and a bar per run, one non-finite
    assert '<a href="#c0-e"' in text and 'id="c0-e"' in text  # the failing cell links to its failure


@pytest.mark.slow
def test_merge_writes_the_matrix_page(tmp_path):
    specs = _broken_gelu(tmp_path)
    reports = []
    for webgpu in ("wgpu", "dawn"):
        path = tmp_path / f"{webgpu}.json"
        run_conformance(f"--specs={specs}", "-k", SELECT, f"--webgpu={webgpu}", f"--conformance-report={path}")
        reports.append(str(path))
    page = tmp_path / "matrix.html"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "merge", *reports, "--html", str(page)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    messages, errors, text, _ = _open(page)
    assert not errors and not messages, (errors, messages)
    assert "(1) " in text and "(2) " in text and "wgpu" in text and "dawn" in text
    failing = {c["id"] for r in reports for c in json.loads(open(r).read())["cases"] if c["status"] == "failed"}
    assert failing and all(case_id in text for case_id in failing)


def _gelu_wrong_below(tmp_path, limit: str = "-4.0"):
    """Gelu that returns 0 below ``limit`` (the shipped one does below -10, where GELU is below 1e-22)."""
    specs = tmp_path / "specs"
    shutil.copytree(REPO_SPECS / GELU, specs / GELU)
    template = specs / GELU / TEMPLATE
    old = "  return select(x * p, {{ T }}(0.0), x < {{ T }}(-CLAMP));"
    assert template.read_text().count(old) == 1
    template.write_text(template.read_text().replace(old, old.replace("-CLAMP", limit)))
    return specs


def _page_facts(page_path) -> dict:
    """What a reader sees of the page in headless Chromium: grid cells, failure blocks, the input plots' bars."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless=new"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(page_path.as_uri())
            return page.evaluate("""() => ({
                cells: [...document.querySelectorAll('td.cell')].map(td => td.innerText),
                blocks: [...document.querySelectorAll('div.failure h3')].map(h => h.innerText),
                text: document.body.innerText,
                height: document.body.scrollHeight,
                inputBars: [...document.querySelectorAll('svg[aria-label="error divided by allowed against the input value"]')]
                    .slice(0, 1).flatMap(svg => [...svg.querySelectorAll('rect[fill="#d73027"] title')]
                    .map(t => t.textContent)),
            })""")
        finally:
            browser.close()


@pytest.mark.slow
def test_the_page_shows_how_much_by_input_and_grouped(tmp_path):
    """Issue 41, item 7: the grid shows each cell's worst err/allowed, a value failure is plotted against its input
    as well as in element order (each bar saying what it aggregates), and identical failures are one block."""
    specs = _gelu_wrong_below(tmp_path)
    report = tmp_path / "out" / "r.json"
    proc = run_conformance(f"--specs={specs}", "-k", "f32 and scalar", f"--conformance-report={report}")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(report.read_text())
    failed = [c for c in data["cases"] if c["status"] == "failed"]
    assert len(failed) > 5, [c["id"] for c in data["cases"]]
    facts = _page_facts(report.with_suffix(".html"))
    worst = max(c["worst_ratio"] for c in failed)
    assert any(f"worst {worst:.3g} x allowed" in cell for cell in facts["cells"]), facts["cells"]
    assert len(facts["blocks"]) == 1 and facts["blocks"][0].startswith(f"{len(failed)} case(s) failed: values"), facts[
        "blocks"
    ]
    for case in failed:  # each case listed, with its rerun command
        assert case["id"] in facts["text"] and case["rerun"] in facts["text"]
    assert "each bar: the largest of its ~" in facts["text"] and "out of tolerance" in facts["text"]
    assert "against the input value, from" in facts["text"]
    uppers = [float(t.split(", ")[1].split(")")[0]) for t in facts["inputBars"]]  # "input in [a, b), n element(s)"
    assert uppers and max(uppers) <= -3.5, facts["inputBars"]  # red only where the input is below -4
    top = max(failed, key=lambda c: c["worst_ratio"])["error_profile"]
    assert top["mismatches"] < top["checked"] and any(0 < share < 1 for share in top["failing"])
