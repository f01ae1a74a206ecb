"""The reference JavaScript loader plans every golden call as the suite does (Node, no WebGPU), and a planted
planning bug shows up as a difference naming the field and both values."""

from __future__ import annotations

import json

import pytest

from cases.golden import load_golden
from conformance.engine.package import REPO_SPECS, find_package_dirs, load_package
from conformance.engine.planner import Planner
from conformance.impls.js_loader.plans import python_result
from conformance.tools.jsjinja import EngineUnavailable
from conformance.tools.loader_plans import compare_package, open_planner
from tests.loader.planted import ROOT, planted_loader

PACKAGES = [p.name for p in find_package_dirs(REPO_SPECS)]


def _planner(loader=None):
    try:
        return open_planner(loader)
    except EngineUnavailable as err:
        pytest.fail(f"the loader planning test needs Node and @huggingface/jinja (npm ci): {err}")


@pytest.fixture(scope="module")
def planner():
    with _planner() as engine:
        yield engine


def golden(name):
    return load_golden(ROOT / "cases" / f"{name}.yaml")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_golden_call_plans_alike(planner, name):
    cases = golden(name)
    assert len(cases) > 100
    found = compare_package(load_package(name), cases, planner)
    assert not found, f"{len(found)} differences, the first: " + "; ".join(map(str, found[:5]))


def test_the_plans_compared_are_the_golden_ones(planner):
    """The Python plans the comparison trusts are the golden files' (variant and dispatch of every pass)."""
    package = load_package("com.microsoft.Softmax")
    planner_py = Planner(package.manifest)
    for case in golden("com.microsoft.Softmax"):
        got = python_result(planner_py, case)
        if case.accepted:
            assert got["plan"]["variant"] == case.expect["variant"], case.id
            assert [[p["dispatch"]["threads"], p["dispatch"]["workgroups"]] for p in got["plan"]["passes"]] == [
                [p["threads"], p["workgroups"]] for p in case.expect["passes"]
            ], case.id
        elif case.expect["outcome"] == "rejected":
            assert got["error"]["reason"] == case.expect["reason"], case.id


# (file, old text, planted text, package, what the first difference must name)
PLANTS = {
    "dispatch-split-off-by-one": (
        "layout.js",
        "const x = Math.ceil(groups / (y * z));",
        "const x = Math.floor(groups / (y * z));",
        "com.microsoft.Softmax",
        "dispatch.workgroups",
    ),
    "when-out-of-priority-order": (
        "manifest.js",
        "variants.sort((a, b) => b.priority - a.priority);",
        "variants.sort((a, b) => a.priority - b.priority);",
        "com.microsoft.Gelu",
        "variant",
    ),
    "uniform-field-in-wrong-slot": (
        "planner.js",
        "const fieldList = b.fields.map((f) => [f.name, f.type, fieldValue(manifest, f, scope)]);",
        "const fieldList = b.fields.map((f) => [f.name, f.type, fieldValue(manifest, f, scope)]).reverse();",
        "com.microsoft.LayerNormalization",
        "uniformBytes",
    ),
    "integer-division-for-float-division": (
        "expressions.js",
        "program = parse(tokenize(`{{ ${source} }}`, OPTIONS));",
        'program = parse(tokenize(`{{ ${source.replace(/(?<!\\/)\\/(?!\\/)/g, "//")} }}`, OPTIONS));',
        "float-division",
        "fields.scale",
    ),
}


def float_division_package(package_copy):
    """Gelu with a uniform f32 field that divides floats (no shipped manifest does: their `/` are integral)."""
    root = package_copy("com.microsoft.Gelu")
    path = root / "manifest.json"
    raw = json.loads(path.read_text())
    lists = list(raw.get("bindingSets", {}).values())
    lists += [p["bindings"] for v in raw["variants"] for p in v["passes"] if isinstance(p["bindings"], list)]
    for bindings in lists:
        for b in bindings:
            if b["buffer"]["type"] == "uniform":
                b["struct"]["fields"].append({"name": "scale", "type": "f32", "value": "1 / (numel(shapes.X) + 3)"})
    path.write_text(json.dumps(raw))
    return load_package(root)


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_planning_bug_is_named(tmp_path, package_copy, plant):
    file, old, new, name, field = PLANTS[plant]
    package = float_division_package(package_copy) if name == "float-division" else load_package(name)
    cases = golden("com.microsoft.Gelu" if name == "float-division" else name)
    with _planner(planted_loader(tmp_path, file, old, new)) as engine:
        found = compare_package(package, cases, engine)
    assert found, f"planted {plant}: no difference found"
    assert field in found[0].field, str(found[0])
    assert str(found[0]).count("Python") == 1 and "JavaScript" in str(found[0])


def test_the_unplanted_float_division_package_plans_alike(planner, package_copy):
    package = float_division_package(package_copy)
    assert not compare_package(package, golden("com.microsoft.Gelu"), planner)
