"""Issue 41, item 8: ONNX Runtime Web's device used to be a raw Python dict (``{'vendor': 'google',
'architecture': 'swiftshader', ...}``) in the terminal and in bold in the HTML; it is one readable line, the page's
``adapter.info`` kept beside it for machines.

Marked ``browsers`` (``--run-browsers``): ORT Web's JSEP provider in headless Chromium, a few Gelu cases.
"""

from __future__ import annotations

import json

import pytest

from tests.certify.conftest import open_page
from tests.hostile.conftest import make_specs, run_conformance  # noqa: F401 (a fixture)
from tests.hostile.test_broken_kernels import GELU

pytestmark = pytest.mark.browsers


def test_ort_webs_device_is_a_line_not_a_dict(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    report = tmp_path / "ort.json"
    proc = run_conformance(
        specs,
        "--impl=onnxruntime-web-jsep",
        "--webgpu=chromium",
        "-k",
        "X and f32 and scalar",
        f"--conformance-report={report}",
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    data = json.loads(report.read_text())
    device = data["device"]
    assert isinstance(device["adapter"], str) and device["adapter"], device
    assert isinstance(device["adapter_info"], dict) and device["adapter_info"].get("vendor"), device
    assert "{'" not in out and "'vendor'" not in out, out[-3000:]
    assert f"device: {device['adapter']}" in out or device["adapter"] in out, out[-3000:]
    messages, errors, text, _ = open_page(report.with_suffix(".html"))
    assert not errors, errors
    assert "{'" not in text and "'vendor'" not in text, text[:3000]
    assert device["adapter"] in text and "browser: Chrom" in text
