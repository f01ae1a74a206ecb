"""A manifest expression that fails to evaluate for a call is a defect: a lint error, a ``planning-failed`` case that
pytest fails with "planning failed: ...", an error of ``python -m cases``; never a recorded rejection."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest

import cases
from cases.calls import CallSpec, accepted
from conformance.certify.checker import Checker
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import CaseFailed, verdict_for
from conformance.engine.package import load_package
from conformance.engine.planner import Planner
from conformance.tools.lint import lint
from tests.cases.conftest import ROOT

POINTER = "/bindingSets/vec4/1"


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """Add with its vec4_suffix predicate missing ``countB % 4 == 0``: binding 'b' then fails for a B that is not
    a whole number of vec4 (the bug an outside author met)."""
    root = tmp_path_factory.mktemp("broken") / "kernels"
    shutil.copytree(ROOT / "specs" / "ai.onnx.Add", root / "ai.onnx.Add")
    path = root / "ai.onnx.Add" / "manifest.json"
    raw = json.loads(path.read_text())
    suffix = next(v for v in raw["variants"] if v["id"] == "vec4_suffix")
    suffix["when"].remove("countB % 4 == 0")
    path.write_text(json.dumps(raw, indent=2))
    package = load_package(root / "ai.onnx.Add")
    return root, package, cases.generate(package)


def test_golden_file_records_no_rejection_for_a_failing_expression(broken):
    _, _, generated = broken
    assert not [c.id for c in generated if c.expect.get("reason") == "expression"]
    failed = [c for c in generated if c.planning_failed]
    assert failed and all(
        c.expect["pointer"] == POINTER and "not a whole number of vec4" in c.expect["message"] for c in failed
    )
    assert all(
        c.id.split("#")[0].split("@")[0].endswith("/planning-failed")
        and "planning_failed" in c.markers
        and "rejected" not in c.markers
        for c in failed
    )
    # the f16 versions are generated too (the calls around a failing one are not dropped)
    assert {c.inputs["A"][1] for c in failed} == {"float32", "float16"}


def test_a_failing_call_counts_as_taken_not_refused(broken):
    _, package, generated = broken
    m = package.manifest
    spec = CallSpec.of(m, {"A": ((4, 1), "float32"), "B": ((1,), "float32")})
    assert accepted(Planner(m), spec)
    assert cases.planning_failures(generated)[0].pointer == POINTER


def test_lint_names_the_pointer_the_call_and_the_message(broken):
    root, _, _ = broken
    found = [str(f) for f in lint(root)]
    failing = [f for f in found if f":{POINTER}: fails to evaluate for " in f]
    assert len(failing) == 1, found
    assert "e.g. case Add/f" in failing[0] and "/planning-failed" in failing[0]
    assert "elements of 'B' are not a whole number of vec4<f" in failing[0]


def test_cases_command_fails_and_says_why(broken, tmp_path):
    root, _, _ = broken
    run = subprocess.run(
        [sys.executable, "-m", "cases", "--specs", str(root), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"manifest.json:{POINTER}: fails to evaluate for " in run.stderr
    assert "reason: expression" not in (tmp_path / "ai.onnx.Add.yaml").read_text()


@pytest.fixture(scope="module")
def checker():
    return Checker(ManifestImplementation(device="vulkan"))


def test_pytest_words_it_planning_failed(broken, checker):
    _, package, generated = broken
    case = next(c for c in generated if c.planning_failed and not c.heavy)
    verdict = verdict_for(case)
    assert verdict.variant == "planning-failed"  # the report's grid does not show it as a rejection
    with pytest.raises(CaseFailed, match=rf"planning failed: {POINTER}: binding 'b': .* not a whole number"):
        checker.check(case, package, verdict)


def test_an_old_expression_rejection_is_worded_planning_failed(broken, checker):
    """A golden file written before this change recorded the call as rejected; running it says what happened."""
    _, package, generated = broken
    case = next(c for c in generated if c.planning_failed and not c.heavy and c.profile.name == "baseline")
    old = dataclasses.replace(case, expect={"outcome": "rejected", "reason": "expression", "detail": POINTER})
    with pytest.raises(CaseFailed, match="planning failed: .*not a whole number") as err:
        checker.check(old, package, verdict_for(old))
    assert "ran and failed" not in str(err.value)
