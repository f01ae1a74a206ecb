"""Template branch coverage, computed by rendering (conformance.shader.branches): the markers change no byte of the
WGSL, a branch no case renders is a dead-template-branch flag with its file, line and condition, lint fails a
shipped package with one and only flags another author's, and every branch of every shipped template is
rendered by a golden case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cases.golden import CASES_DIR, golden_path, load_golden
from cases.weakness import dead_branches
from conformance.engine.call import make_call
from conformance.engine.package import REPO_SPECS, find_package_dirs, load_package
from conformance.engine.planner import Planner
from conformance.engine.profile import BASELINE
from conformance.errors import TemplateError
from conformance.shader import branches
from conformance.shader.render import render
from conformance.tools import lint

ROOT = Path(__file__).resolve().parents[2]
PLANTED = """{% if broadcast == "never" %}
  // a branch no plan renders
{% endif %}
"""


def golden(name):
    """The package and its golden cases (``python -m cases --check`` keeps them current: tests/cases)."""
    package = load_package(REPO_SPECS / name)
    return package, load_golden(golden_path(CASES_DIR, package.name))


def plant(package_copy) -> Path:
    """ai.onnx.Add with a branch on a value its manifest never gives: after line 27 of its template."""
    root = package_copy("ai.onnx.Add")
    path = root / "elementwise-add.wgsl.jinja"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:27]) + PLANTED + "".join(lines[27:]))
    return root


def test_markers_change_no_byte_of_the_wgsl():
    package, found = golden("com.microsoft.LayerNormalization@2")
    env = branches._CoverageSandbox(package)
    planner, seen = Planner(package.manifest), set()
    for case in found:
        if not case.accepted or case.expect["variant"] in seen:
            continue
        seen.add(case.expect["variant"])
        plan = planner.plan(make_call(package.manifest, case.call_args(), case.profile, case.tunables))
        for pass_plan in plan.passes:
            env.ran = set()
            assert render(package, plan, pass_plan, env) == render(package, plan, pass_plan), case.id
            assert env.ran, "no marker ran"
    assert len(seen) == len(package.manifest.variants)


def test_branch_kinds_lines_and_conditions_of_a_template():
    package, found = golden("ai.onnx.Add")
    (cov,) = branches.template_coverage(package, found)
    kinds = {(b.line, b.kind, b.condition) for b in cov.branches}
    assert (28, "if", "split") in kinds and (39, "else", "none of `split` held") in kinds
    assert (43, "elif", 'broadcast == "single"') in kinds and (29, "macro", "at is called") in kinds
    assert not cov.dead
    single = next(b for b in cov.branches if b.kind == "elif")
    assert all("/vec4_single" in i or "/scalar" in i for i in cov.hits[single]), cov.hits[single][:5]


def test_a_planted_dead_branch_is_flagged_with_file_line_and_condition(package_copy):
    root = plant(package_copy)
    package = load_package(root)
    _, found = golden("ai.onnx.Add")
    (cov,) = branches.template_coverage(package, found)
    assert [(b.line, b.kind, b.condition) for b in cov.dead] == [(28, "if", 'broadcast == "never"')]
    (flag,) = dead_branches([cov])
    assert flag.kind == "dead-template-branch"
    assert flag.message.startswith(f'{root / "elementwise-add.wgsl.jinja"}:28: if `broadcast == "never"`: no golden')


def test_lint_fails_a_shipped_package_with_a_dead_branch_and_flags_an_outside_one(package_copy, monkeypatch):
    root = plant(package_copy)
    notes = []
    outside = lint.lint(root, notes=notes)
    assert not [f for f in outside if "dead template branch" in f.message]
    assert [n for n in notes if n.startswith("WEAK dead-template-branch: ") and ":28: if" in n], notes
    monkeypatch.setattr(lint, "REPO_SPECS", root.parent)  # the same package, as if it shipped
    (finding,) = [f for f in lint.lint(root) if "dead template branch" in f.message]
    assert finding.path.endswith("elementwise-add.wgsl.jinja") and finding.pointer == "28"
    assert 'if `broadcast == "never"`' in finding.message


def test_cases_coverage_prints_the_dead_branch_and_fails(package_copy):
    root = plant(package_copy)
    proc = subprocess.run(
        [sys.executable, "-m", "cases", "--coverage", "--specs", str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    assert '28: if broadcast == "never": DEAD: no case renders it' in proc.stdout
    assert "WEAK: dead-template-branch: " in proc.stdout and "elementwise-add.wgsl.jinja:28:" in proc.stdout


@pytest.fixture(scope="module")
def shipped_coverage():
    """Every shipped template's coverage by its golden cases, pooled over the packages sharing it."""
    coverages = []
    for directory in find_package_dirs(REPO_SPECS):
        package, found = golden(directory.name)
        coverages += branches.template_coverage(package, found)
    return branches.pooled(coverages)


def test_every_branch_of_every_shipped_template_is_rendered(shipped_coverage):
    dead = [f"{b.where(c.root)}: {b.kind} {b.condition}" for c in shipped_coverage for b in c.dead]
    assert not dead, "\n".join(dead)


def test_an_unknown_gelu_approximation_fails_the_render_naming_the_line(package_copy):
    """The GELU template's guard is no branch (no shipped plan would render one): an `approximate` other than
    "tanh" or "erf" fails the render at the guard's line instead of compiling some other GELU."""
    root = package_copy("com.microsoft.Gelu")
    manifest = root / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"approximate": "\\"erf\\""', '"approximate": "\\"none\\""'))
    package = load_package(root)
    plan = Planner(package.manifest).plan(make_call(package.manifest, {"X": ((8,), "float32")}, BASELINE, None))
    with pytest.raises(TemplateError, match=r"elementwise-bias-gelu.wgsl.jinja:30: .*approximate_must_be_tanh_or_erf"):
        render(package, plan, plan.passes[0])


def test_branches_rendered_only_into_passes_that_dispatch_nothing_are_idle():
    """Empty tensors plan passes of 0 threads: what they render is in the WGSL but never runs."""
    package, found = golden("ai.onnx.Add")
    empty = [c for c in found if c.accepted and all(p["threads"] == 0 for p in c.expect["passes"])]
    assert empty
    (cov,) = branches.template_coverage(package, empty)
    rendered = [b for b in cov.branches if b.code and cov.hits.get(b)]
    assert rendered and cov.idle == rendered and not cov.dispatched
    flags = [w for w in dead_branches([cov]) if w.kind == "idle-template-branch"]
    assert len(flags) == len(rendered) and "rendered only into passes that dispatch nothing" in flags[0].message
    (whole,) = branches.template_coverage(package, found)
    assert not whole.idle


def test_the_shipped_templates_only_idle_branch_is_the_seeds_scalar_bias_path(shipped_coverage):
    """FastGelu's scalar_bias variant (the seed's, shared byte-identical by the four GELU packages) is selected only
    for empty tensors: every non-empty call with a bias takes a vec4 or tail variant first. Said as a WEAK flag by
    lint and ``cases --coverage``; the seed's package cannot change (docs/coverage.md)."""
    idle = {(c.template, b.line, b.kind, b.condition) for c in shipped_coverage for b in c.idle}
    assert idle == {("elementwise-bias-gelu.wgsl.jinja", 168, "if", "hasBias")}
