"""Names that are also Object.prototype members are ordinary names to the reference loader (issue 51, item 8).

The manifest's names (type variables, roles, attributes, tunables) and the caller's (options.tunables,
options.attributes, a dtype) were looked up with ``in`` and ``object[name]``, which also find ``constructor``,
``toString``, ``__proto__``...: a Gelu whose type variable is ``constructor`` (the suite loads, plans and certifies
it) threw a TypeError on every call in the loader, and ``options.tunables: {constructor: 64}`` or
``options.attributes: {toString: 1}`` were planned where the suite refuses them.
"""

from __future__ import annotations

import json

import pytest

from cases.golden import load_golden
from conformance.engine.package import load_package
from conformance.engine.planner import Planner
from conformance.impls.js_loader.plans import python_result
from conformance.tools.jsjinja import EngineUnavailable
from conformance.tools.loader_plans import compare_package, open_planner
from tests.loader.driver import call_loader
from tests.loader.planted import ROOT

GELU = "com.microsoft.Gelu"
X8 = {"X": {"shape": [8], "dtype": "float32"}}


def renamed(package_copy, name: str, replacements: dict[str, str], edit=None):
    """A copy of ``name`` with each text of its manifest replaced, and ``edit(raw)`` applied to the JSON."""
    root = package_copy(name)
    path = root / "manifest.json"
    text = path.read_text()
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    raw = json.loads(text)
    if edit:
        edit(raw)
    path.write_text(json.dumps(raw, indent=1))
    return load_package(root)


def constructor_gelu(package_copy):
    """Gelu whose type variable is ``constructor``, with an attribute named ``constructor`` (both manifest names)."""

    def attribute(raw):
        raw["attributes"] = {"constructor": {"type": "int", "default": 1}}

    return renamed(
        package_copy,
        GELU,
        {'"dtype": "T"': '"dtype": "constructor"', '"T": [': '"constructor": [', "dtypes.T": "dtypes.constructor"},
        attribute,
    )


def test_a_prototype_named_type_variable_plans_every_golden_call_as_the_suite(package_copy):
    package = constructor_gelu(package_copy)
    cases = load_golden(ROOT / "cases" / f"{GELU}.yaml")
    planner = Planner(package.manifest)
    planned = [c for c in cases if "plan" in python_result(planner, c)]
    assert len(planned) > 100, "the suite plans the renamed package's golden calls"
    try:
        engine = open_planner()
    except EngineUnavailable as err:
        pytest.fail(f"this test needs Node and @huggingface/jinja (npm ci): {err}")
    with engine:
        found = compare_package(package, cases, engine)
    assert not found, f"{len(found)} differences, the first: " + "; ".join(map(str, found[:3]))


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """Calls naming what is not the manifest's, each with an Object.prototype member's name."""
    calls = {f"tunable-{n}": {"tunables": {n: 64}} for n in ("constructor", "toString", "__proto__")}
    calls |= {f"attribute-{n}": {"attributes": {n: 1}} for n in ("toString", "constructor", "__proto__")}
    calls = {
        label: {"package": GELU, "method": "plan", "inputs": X8, "options": options} for label, options in calls.items()
    }
    calls["dtype"] = {"package": GELU, "method": "plan", "inputs": {"X": {"shape": [8], "dtype": "constructor"}}}
    calls["good"] = {"package": GELU, "method": "plan", "inputs": X8, "options": {"tunables": {"WORKGROUP_SIZE": 64}}}
    return call_loader(tmp_path_factory.mktemp("prototype-names"), {GELU: load_package(GELU)}, calls)


@pytest.mark.parametrize("name", ["constructor", "toString", "__proto__"])
def test_a_prototype_named_tunable_is_refused_as_the_suite_refuses_it(refused, name):
    got = refused[f"tunable-{name}"]
    assert got.get("name") == "ContractError", got
    assert (got["reason"], got["argument"]) == ("tunable", name), got
    assert f"{GELU} has no tunable '{name}'; tunables are WORKGROUP_SIZE" in got["message"], got
    assert refused["good"] == {"ok": True, "value": "vec4"}


@pytest.mark.parametrize("name", ["toString", "constructor", "__proto__"])
def test_a_prototype_named_attribute_is_refused_as_the_suite_refuses_it(refused, name):
    got = refused[f"attribute-{name}"]
    assert got.get("name") == "ContractError", got
    assert (got["reason"], got["argument"]) == ("unknown-argument", name), got
    assert f"{GELU} has no attribute '{name}'" in got["message"], got


def test_a_prototype_named_dtype_is_an_unknown_dtype(refused):
    got = refused["dtype"]
    assert got.get("name") == "ContractError" and (got["reason"], got["argument"]) == ("dtype", "X"), got
    assert "argument 'X': unknown dtype \"constructor\"" in got["message"], got


def test_a_prototype_named_role_absent_is_a_missing_input(tmp_path, package_copy):
    """A role ``toString``: a call without it is missing it, as in the suite, not handed Object's toString."""
    package = renamed(
        package_copy,
        GELU,
        {
            '"role": "X"': '"role": "toString"',
            '"arg": "X"': '"arg": "toString"',
            "shapes.X": "shapes.toString",
            "ranks.X": "ranks.toString",
            '"X": {': '"toString": {',
        },
    )
    x8 = {"toString": X8["X"]}
    got = call_loader(
        tmp_path,
        {GELU: package},
        {
            "absent": {"package": GELU, "method": "plan", "inputs": {}},
            "present": {"package": GELU, "method": "plan", "inputs": x8},
            "render": {"package": GELU, "method": "render", "inputs": x8},
        },
    )
    assert got["absent"].get("name") == "ContractError", got["absent"]
    assert (got["absent"]["reason"], got["absent"]["argument"]) == ("missing-input", "toString"), got["absent"]
    assert got["present"] == {"ok": True, "value": "vec4"}, got["present"]
    assert got["render"].get("ok"), got["render"]
