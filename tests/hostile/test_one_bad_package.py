"""One bad package spoils nothing (issue 11, item 4): each failure is that package's, located, counted as failed,
while the other packages run, in pytest, lint and ``python -m cases``."""

from __future__ import annotations

import json

import pytest

from conformance import BASELINE, ConformanceError, load_kernel
from conformance.certify.testjson import TEST_FORMAT
from conformance.engine.package import REPO_SPECS
from conformance.shader.render import render
from conformance.tools.diff import Side, packages
from tests.hostile.conftest import run_cli, run_conformance

GELU = "com.microsoft.Gelu"


def _manifest(name: str, change=None) -> str:
    raw = json.loads((REPO_SPECS / GELU / "manifest.json").read_text())
    raw["name"] = name
    if change:
        change(raw)
    return json.dumps(raw)


#: dir -> (manifest text, test.json text or None, a fragment the package's failure must hold)
BAD = {
    "deep": (
        _manifest("Deep", lambda r: r.__setitem__("description", json.loads("[" * 500 + "]" * 500))),
        None,
        "nested too deeply",
    ),
    "inf-expression": (
        _manifest("InfExpr", lambda r: r["variants"][0]["when"].append("1e999 > 0")),
        None,
        "not finite",
    ),
    "test-json-list": (_manifest("TjList"), "[1]", "test.json"),
    "test-json-profile": (_manifest("TjProfile"), None, "unknown profile 'no-such-profile'"),
    "dup-a": (_manifest("Gelu"), None, "op id 'com.microsoft.Gelu'"),
}


def _bad_specs(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU, "dup-a": GELU, **{k: GELU for k in BAD if k != "dup-a"}})
    for name, (manifest, test_json, _) in BAD.items():
        (specs / name / "manifest.json").write_text(manifest)
        if test_json is not None:
            (specs / name / "test.json").write_text(test_json)
    stored = {
        "format": TEST_FORMAT,
        "package": "com.microsoft.TjProfile",
        "cases": [{"id": "x", "profile": "no-such-profile", "inputs": {}, "expect": {}}],
    }
    (specs / "test-json-profile" / "test.json").write_text(json.dumps(stored))
    return specs


def test_a_literal_1e999_is_refused_in_an_expression_and_a_template(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    (specs / GELU / "manifest.json").write_text(
        _manifest("Gelu", lambda r: r["variants"][0]["when"].append("1e999 > 0"))
    )
    with pytest.raises(ConformanceError, match=r"/variants/0/when/\d.*not finite"):
        load_kernel(specs / GELU).plan(profile=BASELINE, X=((8,), "float32"))
    (specs / GELU / "manifest.json").write_text(_manifest("Gelu"))
    template = specs / GELU / "elementwise-bias-gelu.wgsl.jinja"
    template.write_text("// {{ 1e999 }}\n" + template.read_text())
    kernel = load_kernel(specs / GELU)
    plan = kernel.plan(profile=BASELINE, X=((8,), "float32"))
    with pytest.raises(ConformanceError, match=r"jinja:1: .*not finite"):
        render(kernel.package, plan, plan.passes[0])


def test_pytest_python_m_cases_and_lint_run_the_good_package_and_fail_each_bad_one(tmp_path, make_specs):
    specs = _bad_specs(tmp_path, make_specs)
    report = tmp_path / "report.json"
    proc = run_conformance(specs, "-k", "manifest or Gelu/f32/X[8]", f"--conformance-report={report}", timeout=240)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-4000:]
    data = json.loads(report.read_text())
    statuses = {c["id"]: c for c in data["cases"]}
    for name, (_, _, fragment) in BAD.items():
        case = statuses[f"{name}/manifest"]
        assert case["status"] == "failed", case  # failed, never "not-run: the worker died"
        assert fragment in case["detail"], (name, case["detail"][:500])
    assert statuses[f"{GELU}/manifest"]["status"] == "failed"  # the other holder of the duplicated op id
    assert data["totals"]["failed"] >= len(BAD) + 1 and data["totals"].get("not-run", 0) == 0, data["totals"]
    proc = run_cli("-m", "cases", "--check", "--specs", str(specs), "--out", str(tmp_path / "golden"), timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for name, (_, _, fragment) in BAD.items():
        assert fragment in proc.stderr or name.startswith("test-json"), (name, proc.stderr[-2000:])
    proc = run_cli("-m", "conformance", "lint", str(specs), "--no-compile", timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for name in ("deep", "inf-expression", "dup-a"):
        assert f"{specs / name}" in proc.stdout, (name, proc.stdout[-3000:])


def test_diff_refuses_two_packages_with_one_op_id(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU, "copy": GELU})
    with pytest.raises(ConformanceError, match="both have the op id"):
        packages(Side("new", specs, None))
