"""The mutation tool on a handful of mutants."""

import json
import shutil

import pytest
import yaml

from conformance.engine.package import load_package
from conformance.tools.export import build_test
from conformance.tools.mutate.equivalence import ARGUED_EQUIVALENT, ARGUMENTS, argue
from conformance.tools.mutate.mutants import Mutant, manifest_mutants, mark_unrendered, template_mutants
from conformance.tools.mutate.report import markdown, summarize
from conformance.tools.mutate.runner import _worker_check, run_mutant

TEMPLATE = "elementwise-bias-gelu.wgsl.jinja"


@pytest.fixture(scope="module")
def fast_mutants():
    pkg = load_package("com.microsoft.FastGelu")
    ms = manifest_mutants("FastGelu", pkg.name, json.loads((pkg.root / "manifest.json").read_text()))
    ms += template_mutants("FastGelu", pkg.name, TEMPLATE, (pkg.root / TEMPLATE).read_text())
    return {m.id: m for m in ms}


def test_every_operator_family_is_generated(fast_mutants):
    kinds = {m.kind for m in fast_mutants.values()}
    assert {
        "arith",
        "constant",
        "bounds",
        "tail-guard",
        "bias-dropped",
        "bias-index",
        "erf-tanh",
        "f16-f32",
        "priority",
        "when-dropped",
        "when-negated",
        "derive",
    } <= kinds
    exclusive = fast_mutants["FastGelu/manifest/priority:vec4_bias<->vec4_no_bias"]
    assert exclusive.status == "equivalent" and "present.bias" in exclusive.equivalence


def test_unrendered_template_text_is_equivalent(tmp_path):
    pkg = load_package("com.microsoft.Gelu")
    text = (pkg.root / TEMPLATE).read_text()
    ms = [
        m
        for m in template_mutants("Gelu", pkg.name, TEMPLATE, text)
        if m.kind == "bias-dropped" or m.id.endswith("erf-tanh/swap")
    ]
    mark_unrendered(pkg.root, ms)
    assert all(m.status == "equivalent" for m in ms if m.kind == "bias-dropped")  # Gelu has no bias
    assert next(m for m in ms if m.id.endswith("erf-tanh/swap")).status == "pending"  # this one is rendered


def test_template_text_rendered_only_for_passes_that_dispatch_nothing_is_idle():
    """Gelu@2 selects its scalar variant only for empty tensors: a mutant of the plain scalar path changes only
    shaders no runtime compiles or runs; one of a path that dispatches stays to be run."""
    pkg = load_package("com.microsoft.Gelu@2")
    text = (pkg.root / TEMPLATE).read_text()
    ms = {m.id: m for m in template_mutants("Gelu", pkg.name, TEMPLATE, text)}
    idle = next(m for i, m in ms.items() if i.startswith("Gelu/tpl/early-return/L167:") and "negated" in m.description)
    vec4 = next(m for i, m in ms.items() if i.startswith("Gelu/tpl/early-return/L124:"))
    mark_unrendered(pkg.root, [idle, vec4])
    assert idle.status == "equivalent" and idle.equivalence.startswith("idle for this package"), idle.equivalence
    assert vec4.status == "pending"


def test_equivalence_arguments_load_from_the_data_file_in_order():
    entries = yaml.safe_load(ARGUMENTS.read_text())
    assert list(ARGUED_EQUIVALENT) == [(e["package"], e["pattern"]) for e in entries] and len(entries) >= 15
    m = Mutant(
        "Gelu/manifest/variants/vec4/when/0:drop",
        "com.microsoft.Gelu",
        "manifest.json",
        "when-dropped",
        "variant vec4: predicate `true` dropped",
    )
    other = Mutant(
        "Gelu/manifest/variants/vec4/when/0:negate",
        "com.microsoft.Gelu",
        "manifest.json",
        "when-negated",
        "variant vec4: predicate `true` negated",
    )
    argue("Gelu", [m, other])
    assert m.status == "equivalent" and "conjunction unchanged" in m.equivalence and other.status == "pending"


@pytest.mark.slow
def test_a_mutant_is_killed_by_a_named_case(fast_mutants, tmp_path):
    pkg = load_package("com.microsoft.Gelu")
    m = next(
        m
        for m in template_mutants("Gelu", pkg.name, TEMPLATE, (pkg.root / TEMPLATE).read_text())
        if m.id.endswith("erf-tanh/swap")
    )
    test_json = tmp_path / "test.json"
    test_json.write_text(json.dumps(build_test(pkg)))
    done = run_mutant(m, pkg.root, test_json, tmp_path, timeout=300)
    assert done.status == "killed" and done.killed_by.startswith("test.json/Gelu/"), done
    result = summarize([done], {}, 1.0, 1)
    assert result["kill_rate"] == 1.0 and "Killed mutants" in markdown(result)


@pytest.mark.slow
def test_worker_kills_a_template_mutant_in_process(tmp_path):
    pkg = load_package("com.microsoft.Gelu")
    m = next(
        m for m in template_mutants("Gelu", pkg.name, TEMPLATE, (pkg.root / TEMPLATE).read_text()) if m.kind == "clamp"
    )
    test_json = tmp_path / "test.json"
    test_json.write_text(json.dumps(build_test(pkg)))
    mutant = tmp_path / "m" / pkg.root.name
    shutil.copytree(pkg.root, mutant)
    (mutant / TEMPLATE).write_text(m._apply((mutant / TEMPLATE).read_text()))
    mid, status, killer, detail, _ = _worker_check(m.id, str(mutant), str(pkg.root), str(test_json))
    assert status == "killed" and killer.startswith("test.json/Gelu/") and "differs from the reference" in detail
    mid, status, killer, _, _ = _worker_check("none", str(pkg.root), str(pkg.root), str(test_json))
    assert status == "survived" and killer is None


@pytest.mark.slow
def test_two_versions_of_an_op_keep_their_own_cases_and_results(tmp_path):
    """The versions of an op share a template and its mutant ids: each version's mutants run against its own
    stored cases and report their own result (a shared scratch name once ran version 1 against version 2's)."""
    from conformance.config import REPO_SPECS
    from conformance.tools.mutate.runner import mutate_packages

    lines = []
    result = mutate_packages(
        [REPO_SPECS / "com.microsoft.Gelu", REPO_SPECS / "com.microsoft.Gelu@2"],
        jobs=1,
        only="erf-tanh/swap",
        log=lines.append,
    )
    killed = {m["package"]: m["killed_by"] for m in result["mutants"] if m["status"] == "killed"}
    assert set(killed) == {"com.microsoft.Gelu", "com.microsoft.Gelu@2"}, lines
    assert killed["com.microsoft.Gelu"].startswith(("Gelu/", "test.json/Gelu/")), killed
    assert killed["com.microsoft.Gelu@2"].startswith(("Gelu@2/", "test.json/Gelu@2/")), killed


def test_the_mutants_run_on_the_device_asked_for(monkeypatch):
    """``mutate --device gl`` (CONFORMANCE_DEVICE for the workers) reaches llvmpipe without shader-f16, where the
    `usesF16` forced-true mutants fail to compile; without it, Vulkan as before."""
    from conformance.tools.mutate.runner import mutation_device

    monkeypatch.delenv("CONFORMANCE_DEVICE", raising=False)
    assert mutation_device() == "vulkan"
    monkeypatch.setenv("CONFORMANCE_DEVICE", "gl")
    assert mutation_device() == "gl"
