"""Weakness reaches the conformance report (issue 27): the case generator's flags of a weak package (cases.weakness)
in the JSON, Markdown and HTML of ``--conformance-report``, in ``merge`` and once in the terminal summary; a case that
compared no element says ``compared: 0`` in its verdict and is listed, and cannot make a cell checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from html import escape

import pytest

from conformance.certify import evidence, report
from conformance.certify.report import matrix
from conformance.certify.report.quote import cell
from tests.certify.conftest import REPO
from tests.conftest import UNUSED_PLUGINS
from tests.ops.third_party import outside_copy

SOFTMAX = "com.microsoft.Softmax"
OP = "com.example.Softmax"

#: A record that declares the row op Softmax elementwise: its values-nonfinite cases then fill every row.
RECORD_MODULE = f"""
import dataclasses
from conformance.ops import builtin

RECORD = dataclasses.replace(next(r for r in builtin.RECORDS if r.op == {SOFTMAX!r}), op={OP!r},
                             structure="elementwise")
"""


@pytest.fixture
def weak_package(tmp_path):
    """kernels/com.example.Softmax and, on a path of its own, the distribution of its weak record."""
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    outside_copy(REPO / "specs" / SOFTMAX, kernels)
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "weak_softmax.py").write_text(textwrap.dedent(RECORD_MODULE))
    info = dist / "weak-softmax-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: weak-softmax\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[conformance.ops]\nsoftmax = weak_softmax:RECORD\n")
    return kernels, dist


def run(dist, *args, timeout=600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(dist)])}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_weak_packages_flags_and_its_no_compare_cases_are_in_the_report_and_merge(weak_package, tmp_path):
    kernels, dist = weak_package
    out = tmp_path / "out" / "r.json"
    proc = run(
        dist,
        "-m",
        "pytest",
        "conformance/test_kernels.py",
        f"--specs={kernels}",
        "--device=vulkan",
        "-q",
        "-p",
        "no:cacheprovider",
        *UNUSED_PLUGINS,
        "-k",
        "nonfinite",
        f"--conformance-report={out}",
    )
    data = json.loads(out.read_text())
    kinds = {w["kind"]: w["message"] for w in data["weak"]}
    assert {"no-compare", "row-dispatch-elementwise"} <= set(kinds), data["weak"]
    assert "declare structure='rows'" in kinds["no-compare"]
    assert all(w["package"] == OP for w in data["weak"])

    # every selected case filled each row with a non-finite value: it passed, having compared no element
    ran = data["cases"]
    assert len(ran) == 4 and all(c["status"] == "passed" for c in ran), [(c["id"], c["status"]) for c in ran]
    assert all(c["compared"] == 0 and c["evidence"] is None for c in ran), ran
    assert all(c["detail"].startswith("compared no element: all ") for c in ran), ran[0]["detail"]
    assert sorted(c["id"] for c in data["compared_nothing"]) == sorted(c["id"] for c in ran)
    # ...so no cell rests on a compared value: never "conforms"
    assert data["result"] == "nothing-checked" and proc.returncode == 1, proc.stdout[-3000:]

    md = out.with_suffix(".md").read_text()
    html = out.with_suffix(".html").read_text()
    assert "## Weaker than it looks" in md and '<h2 id="weak">Weaker than it looks</h2>' in html
    for line in evidence.flag_lines(data["weak"], data["compared_nothing"]):
        assert f"- {cell(line)}" in md
        assert f"<li>{escape(line)}</li>" in html

    # the terminal summary says each flag once
    lines = proc.stdout.splitlines()
    assert sum(line.startswith(f"weak: {OP}: no-compare: ") for line in lines) == 1, proc.stdout[-3000:]
    assert sum(line.startswith(f"weak: {OP}: row-dispatch-elementwise: ") for line in lines) == 1
    assert any(line.strip().startswith(ran[0]["id"] + ": compared no element") for line in lines)

    merged = tmp_path / "m"
    proc = run(
        dist,
        "-m",
        "conformance",
        "merge",
        str(out),
        str(out),
        f"--out={merged}.md",
        f"--json={merged}.json",
        f"--html={merged}.html",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    grid = json.loads(merged.with_suffix(".json").read_text())
    assert grid["weak"] == data["weak"]  # each flag once, from both reports
    assert len(grid["compared_nothing"]) == 2 * len(ran)  # each column's cases, named by column
    assert {c["column"] for c in grid["compared_nothing"]} == {"(1)", "(2)"}
    text = merged.with_suffix(".md").read_text()
    assert "## Weaker than it looks" in text and f"{OP}: no-compare: " in text
    assert cell(f"{ran[0]['id']} on (1): compared no element") in text
    assert f"{OP}: row-dispatch-elementwise: " in merged.with_suffix(".html").read_text()


def test_compared_nothing_names_passed_cases_with_outputs_only():
    base = {
        "package": "p",
        "variant": "vec4",
        "dtype": "float32",
        "family": "f",
        "worst_ratio": None,
        "expected_variant": "vec4",
        "evidence": None,
    }
    verdicts = [
        {**base, "id": "a", "status": "passed", "compared": 0, "detail": "compared no element: all 8 ..."},
        {**base, "id": "b", "status": "passed", "compared": 0, "empty": True, "evidence": "shapes"},
        {**base, "id": "c", "status": "failed", "compared": 0},
        {**base, "id": "d", "status": "passed", "compared": 5, "evidence": "values"},
    ]
    assert [c["id"] for c in evidence.compared_nothing(verdicts)] == ["a"]
    data = report.build(
        verdicts,
        identity=[],
        device=None,
        implementation="x",
        skipped_reasons={},
        deselected_heavy=0,
        weak=[{"package": "p", "kind": "no-compare", "message": "m"}],
    )
    assert data["compared_nothing"][0]["why"] == "compared no element: all 8 ..."
    assert "- p: no-compare: m" in report.markdown(data) and "- a: compared no element: all 8 ..." in report.markdown(
        data
    )
    grid = matrix.merge([(REPO / "a.json", data), (REPO / "b.json", data)])
    assert grid["weak"] == data["weak"] and [c["column"] for c in grid["compared_nothing"]] == ["(1)", "(2)"]
