"""``python -m conformance diff`` and its ``--gate``: manifest edits with and without a behavioural effect."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

import cases
from cases.golden import HEADER, _Dumper
from cases.golden import compare as golden_compare
from conformance.__main__ import main
from conformance.cli.cases import main as cases_main
from conformance.engine.package import load_package
from tests.gate.conftest import FASTGELU, ROOT, edit_manifest, git, make_repo, variant


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
    subprocess.run(
        [sys.executable, "-m", "cases", "--specs", str(repo / "specs"), "--out", str(repo / "cases")],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


def test_revisions_and_gate(repo, capsys):
    edit_manifest(repo / "specs" / FASTGELU, swap_tail_and_scalar)
    # the work tree against HEAD: a change the golden file does not acknowledge
    code, report = run_json(capsys, "HEAD", "--repo", repo, "--gate")
    assert code == 1 and report["changed"]
    assert report["unacknowledged"] == [
        f"{FASTGELU}: behaviour changed but {repo}/cases/{FASTGELU}.yaml does not "
        f"match the new manifest: run `python -m cases --specs {repo}/specs --out "
        f"{repo}/cases`, review the diff and commit it"
    ]
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


# -- a kernel repository's layout: every fix-it hint is a command that works as printed there ----------
def kernel_repo(tmp_path):
    """A git repository laid out as the README's kernel repository: kernels/ and kernel-cases/."""
    return make_repo(tmp_path / "kernel-repo", "kernels", "kernel-cases")


def run_in(cwd, *argv):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def hinted_command(text: str) -> list[str]:
    """The command inside the first `python -m cases ...` hint of ``text``, ready to run."""
    found = re.search(r"`(python -m cases[^`]*)`", text)
    assert found, text
    words = shlex.split(found.group(1))
    return words[1:]  # without "python": run_in supplies this interpreter


def test_hints_in_a_kernel_repository_rewrite_its_own_golden_files(tmp_path):
    repo = kernel_repo(tmp_path)
    own = {p.name: p.read_bytes() for p in (ROOT / "cases").glob("*.yaml")}
    edit_manifest(repo / "kernels" / FASTGELU, swap_tail_and_scalar)
    check = run_in(repo, "-m", "cases", "--specs", "kernels", "--out", "kernel-cases", "--check")
    assert check.returncode == 1
    command = hinted_command(check.stdout)
    assert command == ["-m", "cases", "--specs", "kernels", "--out", "kernel-cases"]
    gate_args = (
        "-m",
        "conformance",
        "diff",
        "HEAD",
        "--gate",
        "--specs-path",
        "kernels",
        "--golden-path",
        "kernel-cases",
    )
    gate = run_in(repo, *gate_args)
    assert gate.returncode == 1 and hinted_command(gate.stdout) == command, gate.stdout
    again = re.search(r"then check again: `([^`]*)`", gate.stdout).group(1)
    assert shlex.split(again)[1:] == list(gate_args)  # the gate itself, with --specs-path and --golden-path
    assert run_in(repo, *command).returncode == 0  # the hint, as printed, from where it was printed
    assert run_in(repo, "-m", "cases", "--specs", "kernels", "--out", "kernel-cases", "--check").returncode == 0
    assert run_in(repo, *gate_args).returncode == 0
    assert {p.name: p.read_bytes() for p in (ROOT / "cases").glob("*.yaml")} == own  # the suite's files untouched
    assert not (ROOT / "cases" / "kernel-cases").exists()
    # from a subdirectory the same hint carries the paths that work there
    sub = repo / "docs"
    sub.mkdir()
    check = run_in(sub, "-m", "cases", "--specs", "../kernels", "--out", "../kernel-cases", "--check")
    assert check.returncode == 0
    edit_manifest(repo / "kernels" / FASTGELU, swap_tail_and_scalar)  # swapped back: stale again
    check = run_in(sub, "-m", "cases", "--specs", "../kernels", "--out", "../kernel-cases", "--check")
    assert hinted_command(check.stdout) == [
        "-m",
        "cases",
        "--specs",
        str(repo / "kernels"),
        "--out",
        str(repo / "kernel-cases"),
    ]


# -- cases --check and diff --gate: one notion of a behaviour change -------------------------------------
def reorder_rejection_details(golden) -> int:
    """Write the golden file again with every per-variant rejection detail in reverse order; how many."""
    data = yaml.safe_load(golden.read_text())
    reordered = 0
    for case in data["cases"]:
        detail = case["expect"].get("detail")
        if isinstance(detail, dict) and len(detail) > 1:
            case["expect"]["detail"] = dict(reversed(list(detail.items())))
            reordered += 1
    golden.write_text(HEADER + yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=1000, allow_unicode=True))
    return reordered


def test_check_summarizes_and_agrees_with_the_gate(repo, capsys):
    specs, golden = repo / "specs", repo / "cases" / f"{FASTGELU}.yaml"
    edit_manifest(specs / FASTGELU, swap_tail_and_scalar)
    assert cases_main(["--specs", str(specs), "--out", str(repo / "cases"), "--check"]) == 1
    out = capsys.readouterr().out
    summary = re.search(
        rf"  {re.escape(FASTGELU)}: (\d+) calls added, (\d+) removed, (\d+) changed \(of \d+\): "
        rf"out of date",
        out,
    )
    assert summary and summary.start() < out.index("@@"), out[:2000]  # the summary comes above the diff
    delta = golden_compare(golden, cases.generate(load_package(specs / FASTGELU)))
    assert [len(delta.added), len(delta.removed), len(delta.changed)] == [int(g) for g in summary.groups()]
    code, report = run_json(capsys, "HEAD", "--repo", repo, "--gate")
    assert code == 1
    listed = {c.split("#")[0] for c in delta.added + delta.removed + delta.changed}
    assert {c.split("#")[0] for c in changes(report)} <= listed  # each change the gate sees, --check sees
    regenerate_golden(repo)
    # the same calls and outcomes, the rejection details in another order: neither tool calls that a change
    assert reorder_rejection_details(golden) > 10
    assert cases_main(["--specs", str(specs), "--out", str(repo / "cases"), "--check"]) == 0
    assert "same calls and outcomes, written differently (not a behaviour change)" in capsys.readouterr().out
    code, report = run_json(capsys, "HEAD", "--repo", repo, "--gate")
    assert code == 0 and report["changed"] and report["unacknowledged"] == []
