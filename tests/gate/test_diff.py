"""``python -m conformance diff`` and its ``--gate``: manifest edits with and without a behavioural effect."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from conformance.__main__ import main
from tests.gate.conftest import FASTGELU, ROOT, edit_manifest, git, variant


@pytest.fixture
def old_new(specs, tmp_path):
    """OLD: FastGelu as in specs/; NEW: a copy to edit."""
    new = tmp_path / "new"
    shutil.copytree(specs / FASTGELU, new)
    return specs / FASTGELU, new


def run_json(capsys, *argv) -> tuple[int, dict]:
    code = main(["diff", *map(str, argv), "--json"])
    return code, json.loads(capsys.readouterr().out)


def changes(report: dict) -> dict[str, dict]:
    return {c["case"]: c for c in report["packages"][f"{FASTGELU}"]["changes"]}


def swap_tail_and_scalar(raw):
    """vec4_tail_no_bias below scalar_no_bias: scalar_no_bias (`when` true) now takes every no-bias tail call."""
    tail, scalar = variant(raw, "vec4_tail_no_bias"), variant(raw, "scalar_no_bias")
    tail["priority"], scalar["priority"] = scalar["priority"], tail["priority"]


def test_priority_swap_reports_the_calls_that_move(old_new, capsys):
    old, new = old_new
    edit_manifest(new, swap_tail_and_scalar)
    code, report = run_json(capsys, old, new)
    assert code == 1 and report["changed"]
    found = changes(report)
    assert {"FastGelu/f32/X[5]/scalar_no_bias", "FastGelu/f16/X[3,5]/scalar_no_bias"} <= found.keys()
    for c in found.values():  # exactly the no-bias tail calls move, and their dispatch with them
        assert (c["old"]["variant"], c["new"]["variant"]) == ("vec4_tail_no_bias", "scalar_no_bias")
        assert c["fields"] == ["variant", "dispatch"]
    x5 = found["FastGelu/f32/X[5]/scalar_no_bias"]
    assert (x5["old"]["passes"][0]["threads"], x5["new"]["passes"][0]["threads"]) == (2, 5)


def test_derive_threshold_reports_boundary_calls(old_new, capsys):
    old, new = old_new
    path = new / "manifest.json"
    text = path.read_text()
    assert text.count("dim(shapes.X, ranks.X - 1) % 4 == 0") == 1
    path.write_text(text.replace("dim(shapes.X, ranks.X - 1) % 4 == 0", "dim(shapes.X, ranks.X - 1) % 8 == 0"))
    code = main(["diff", str(old), str(new)])
    table = capsys.readouterr().out
    assert code == 1
    assert "FastGelu/f32/X[4]/vec4_tail_no_bias" in table and "FastGelu/f16/X[2,4]+bias[4]/vec4_tail_bias" in table
    code, report = run_json(capsys, old, new)
    found = changes(report)
    moved = {(c["old"]["variant"], c["new"]["variant"]) for c in found.values()}
    assert moved == {("vec4_no_bias", "vec4_tail_no_bias"), ("vec4_bias", "vec4_tail_bias")}
    for c in found.values():  # last dimension 4 mod 8; a last dimension of 8 keeps vec4
        assert c["call"]["inputs"]["X"]["shape"][-1] % 8 == 4


def test_reformatted_json_is_no_change(old_new, capsys):
    old, new = old_new
    path = new / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=4, sort_keys=True))
    assert main(["diff", str(old), str(new)]) == 0
    assert re.fullmatch(rf"{re.escape(FASTGELU)}: 0 of \d+ calls change", capsys.readouterr().out.strip())


def test_added_package_and_unknown_revision(specs, tmp_path, capsys):
    assert main(["diff", str(specs / FASTGELU), str(specs)]) == 1
    out = capsys.readouterr().out
    assert "com.microsoft.Gelu" in out and "absent (no package)" in out
    assert main(["diff", "no-such-rev", str(specs), "--repo", str(tmp_path)]) == 2


# -- git revisions and the gate --------------------------------------------------------------------
def regenerate_golden(repo):
    subprocess.run([sys.executable, "-m", "cases", "--specs", str(repo / "specs"), "--out", str(repo / "cases")],
                   cwd=ROOT, check=True, capture_output=True)


def test_revisions_and_gate(repo, capsys):
    edit_manifest(repo / "specs" / FASTGELU, swap_tail_and_scalar)
    # the work tree against HEAD: a change the golden file does not acknowledge
    code, report = run_json(capsys, "HEAD", "--repo", repo, "--gate")
    assert code == 1 and report["changed"]
    assert report["unacknowledged"] == [f"{FASTGELU}: behaviour changed but {repo}/cases/{FASTGELU}.yaml does not "
                                        f"match the new manifest: run `python -m cases`, review the diff and commit it"]
    regenerate_golden(repo)
    code, report = run_json(capsys, "HEAD", "--repo", repo, "--gate")
    assert code == 0 and report["changed"] and report["unacknowledged"] == []
    # committed: HEAD~1 -> HEAD as git revisions, the plain diff still reports the change
    git(repo, "commit", "-qam", "swap")
    code, report = run_json(capsys, "HEAD~1", "HEAD", "--repo", repo)
    assert code == 1 and "FastGelu/f32/X[5]/scalar_no_bias" in changes(report)
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(repo), "--gate"]) == 0


def test_gate_passes_a_reformat_without_golden_changes(repo, capsys):
    path = repo / "specs" / FASTGELU / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=1, sort_keys=True))
    assert main(["diff", "HEAD", "--repo", str(repo), "--gate"]) == 0
    assert re.search(r"\b0 of \d+ calls change", capsys.readouterr().out)
