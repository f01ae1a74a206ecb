"""Issue 41, item 2: a failure's rerun line under ``certify`` works when pasted. It used to name ``-c`` with the
``pytest.ini`` of certify's temporary directory, gone once certify exits; now it is a ``certify`` command with
the case selected (``--case``), absolute paths, writing its report beside the first one."""

from __future__ import annotations

import html
import json
import shlex
import shutil
import subprocess

import pytest

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import TEMPLATE, edit, run_cli

GELU = "com.microsoft.Gelu"
pytestmark = pytest.mark.slow


def test_a_certify_rerun_line_runs_its_one_case_when_pasted(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(REPO_SPECS / GELU, repo / "kernels" / GELU)
    edit(
        repo / "kernels" / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count || params.count > 0u) { return; }\n",
    )  # writes nothing: values fail
    proc = run_cli(
        "-m",
        "conformance",
        "certify",
        "--specs",
        "kernels",
        "--device",
        "vulkan",
        "--report",
        "out/report.json",
        cwd=repo,
        timeout=400,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((repo / "out" / "report.json").read_text())
    failed = [c for c in data["cases"] if c["status"] == "failed"]
    assert failed and all(c.get("rerun") for c in failed), data["totals"]
    case = failed[0]
    rerun = case["rerun"]
    assert "conformance-certify-" not in rerun and "pytest.ini" not in rerun, rerun
    assert f"rerun: {rerun}" in proc.stdout  # the terminal says the same
    assert html.escape(rerun) in (repo / "out" / "report.html").read_text()  # and the HTML report
    words = shlex.split(rerun)
    assert words[words.index("certify") + 1 :][-2] == "--case", words
    elsewhere = tmp_path / "elsewhere"  # pasted later, in another directory: the temp dir is gone
    elsewhere.mkdir()
    again = subprocess.run(rerun, shell=True, cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout[-3000:] + again.stderr[-3000:]
    rerun_report = json.loads((repo / "out" / "report-rerun.json").read_text())
    assert [(c["id"], c["status"]) for c in rerun_report["cases"]] == [(case["id"], "failed")]
    assert json.loads((repo / "out" / "report.json").read_text()) == data  # the first report is kept
