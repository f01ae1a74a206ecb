"""Issue 41, item 9: a web repro opened in a browser without WebGPU says "CANNOT RUN HERE" (it used to read
"FAIL: rejects a call that must be accepted: no available backend found", the same as a failure that reproduces),
and the repro index lists every failure: one that no repro can show (a node ORT Web would place on the CPU) is in a
group of its own with why, instead of being left out (32 covered, 33 reported).

Marked ``browsers`` (``--run-browsers``): ORT Web in headless Chromium.
"""

from __future__ import annotations

import json

import pytest

from tests.browsers.test_onnxruntime_web import _impl, _open, _write, check, repro_server  # noqa: F401 (a fixture)
from tests.hostile.conftest import make_specs, run_conformance  # noqa: F401 (a fixture)
from tests.hostile.test_broken_kernels import GELU

pytestmark = pytest.mark.browsers


def test_a_repro_in_a_browser_without_webgpu_cannot_run_here(repro_server):
    root, base = repro_server
    _, err = check("onnxruntime-web-jsep", "com.microsoft.Gelu", "Gelu/f16/X[2,2,2,2,2,4]/vec4")
    directory = _write(root, "no-webgpu", _impl("onnxruntime-web-jsep").repro_files(err.failure))
    title = _open(f"{base}/{directory.name}/index.html?ort={base}/ort/", flags=("--no-sandbox",))
    assert title.startswith("CANNOT RUN HERE: this browser offers no WebGPU ("), title
    assert "requestAdapter() returned null" in title and "--enable-unsafe-webgpu" in title, title
    assert not title.startswith(("FAIL", "PASS"))
    assert "CANNOT RUN HERE" in (directory / "README.md").read_text()


def test_the_repro_index_lists_a_failure_no_repro_can_show(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    report, repros = tmp_path / "ort.json", tmp_path / "repros"
    run_conformance(
        specs,
        "--impl=onnxruntime-web",
        "--webgpu=chromium",
        "-k",
        "f64 or (f16 and vec4)",
        f"--conformance-report={report}",
        f"--repro-dir={repros}",
        timeout=600,
    )
    data = json.loads(report.read_text())
    failed = {c["id"] for c in data["cases"] if c["status"] == "failed"}
    index = json.loads((repros / "index.json").read_text())
    members = {m for g in index["groups"] for m in g["members"]}
    assert index["failures"] == len(failed) and members == failed, (sorted(failed - members), index["failures"])
    (lost,) = [g for g in index["groups"] if g["kind"] == "not-reproducible"]
    assert "Gelu/f64/X[4,3]/reject-dtype" in lost["members"] and lost["repro"] is None
    assert "ProviderFallback" in lost["signature"] and "no standalone repro" in lost["note"], lost
    text = (repros / "index.md").read_text()
    assert "not-reproducible" in text and "No repro: no standalone repro" in text
