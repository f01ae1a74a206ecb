"""Budgets for templates and expressions (README, "Budgets"), counted in work, never in seconds: every line run
and every operation of a template, with the characters and items it builds or scans, are charged to the render's
and the package's budgets; expressions are bounded by node counts. So the same package gets the same verdict on a
fast machine, a slow one and a busy one: the tests below also run with a clock that races or stands still."""

from __future__ import annotations

import copy
import itertools
import json
import re

import pytest

from conformance import BASELINE, ConformanceError, load_kernel
from conformance.engine.package import REPO_SPECS
from conformance.shader import render as render_module
from conformance.shader.render import MAX_TEMPLATE, MAX_VALUE, RENDER_WORK_LIMIT, render, work_spent
from tests.hostile.conftest import TEMPLATE, seed

GELU = "com.microsoft.Gelu"


def _render(specs, prefix: str):
    template = specs / GELU / TEMPLATE
    template.write_text(prefix + template.read_text())
    kernel = load_kernel(specs / GELU)
    plan = kernel.plan(profile=BASELINE, X=((8,), "float32"))
    with pytest.raises(ConformanceError) as info:
        render(kernel.package, plan, plan.passes[0])
    return str(info.value), work_spent(kernel.package)


@pytest.fixture(params=["real-clock", "frozen-clock", "racing-clock"])
def clock(request, monkeypatch):
    """The render under the real clock, one that never moves (an infinitely fast machine) and one that jumps a
    second at every reading (a machine slowed down 1,000 times): budgets and verdicts must not change."""
    if request.param != "real-clock":
        ticks = itertools.count(0.0, 0.0 if request.param == "frozen-clock" else 1.0)
        monkeypatch.setattr(render_module.time, "monotonic", lambda: next(ticks))
        if request.param == "racing-clock":
            monkeypatch.setattr(render_module, "RENDER_TIME_BACKSTOP", float("inf"))
    return request.param


BOMBS = {  # a template prefix -> what the refusal says
    "nested-bigint-one-line": ("{{ " + "*".join(["(2**2000)"] * 120) + " }}\n", "integer of more than"),
    "square-chain-one-line": ("{% set a = 3**1000 %}{{ " + "*".join(["a"] * 40) + " }}\n", "integer of more than"),
    "center": ("{{ 'x'.center(10**9) }}\n", "too large"),
    "ljust-chain": (
        "{{ 'x'.ljust(1000000).ljust(1000000).ljust(1000000) ~ 'x'.ljust(1000000) }}\n",
        "longer than|RENDER_WORK_LIMIT",
    ),  # whichever bound it reaches first
    "replace": ("{{ ('ab' * 1000).replace('a', 'x' * 1000) }}\n", "longer than"),
    "join": ("{{ ('a' * 1000000).join(['b'] * 1000) }}\n", "longer than"),
    "expandtabs": ("{{ ('\\t' * 100000).expandtabs(1000000) }}\n", "longer than"),
    # about 1.5e9 units of work on one line, over 300 times the render budget
    "one-long-line-of-work": (
        "{% set s = 'a' * 1000000 %}{{ [" + ", ".join(["s.replace('a', 'b') | length"] * 1500) + "] | sum }}\n",
        "RENDER_WORK_LIMIT",
    ),
    "comparisons-on-one-line": (
        "{% set s = 'a' * 1000000 %}{% set t = 'a' * 1000000 %}{{ [" + ", ".join(["s == t"] * 1500) + "] | length }}\n",
        "RENDER_WORK_LIMIT",
    ),
    "slices-on-one-line": (
        "{% set s = 'a' * 1000000 %}{{ [" + ", ".join(["s[1:]|length"] * 1500) + "] | sum }}\n",
        "RENDER_WORK_LIMIT",
    ),
    "empty-loops": (
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}\n",
        "RENDER_WORK_LIMIT",
    ),
    "too-large": ("//" + "x" * MAX_TEMPLATE + "\n", f"larger than {MAX_TEMPLATE}"),
    "inf-literal": ("{% set x = 1e999 %}{{ x }}\n", "not finite"),
}


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_template_bombs_are_refused_within_the_budget(make_specs, kind, clock):
    prefix, fragment = BOMBS[kind]
    message, spent = _render(make_specs(**{GELU: GELU}), prefix)
    assert re.search(fragment, message), message[-300:]
    assert spent <= RENDER_WORK_LIMIT + 4 * MAX_VALUE, spent  # stopped at the budget, not after the work


@pytest.mark.parametrize(
    "package, call",
    [
        ("com.microsoft.Gelu", {"X": ((4, 1000), "float32")}),
        ("com.microsoft.LayerNormalization", {"X": ((4, 1000), "float32"), "scale": ((1000,), "float32")}),
    ],
    ids=["Gelu", "LayerNormalization"],
)
def test_the_same_render_costs_the_same_work_whatever_the_clock(package, call, clock):
    """A shipped template renders under every clock, and costs exactly the same units each time."""
    kernel = load_kernel(REPO_SPECS / package)
    plan = kernel.plan(profile=BASELINE, **call)
    costs = []
    for _ in range(2):
        before = work_spent(kernel.package)
        assert "@compute" in render(kernel.package, plan, plan.passes[0])
        costs.append(work_spent(kernel.package) - before)
    assert costs[0] == costs[1] and 0 < costs[0] < RENDER_WORK_LIMIT // 10, costs


def test_a_package_has_a_total_render_budget(make_specs, monkeypatch):
    specs = make_specs(**{GELU: GELU})
    kernel = load_kernel(specs / GELU)
    plan = kernel.plan(profile=BASELINE, X=((8,), "float32"))
    render(kernel.package, plan, plan.passes[0])
    one_render = work_spent(kernel.package)
    monkeypatch.setattr(render_module, "PACKAGE_RENDER_WORK", 2 * one_render + one_render // 2)
    render(kernel.package, plan, plan.passes[0])  # the second render fits, the third does not
    with pytest.raises(ConformanceError, match="PACKAGE_RENDER_WORK"):
        render(kernel.package, plan, plan.passes[0])
    with pytest.raises(ConformanceError, match="has spent its"):  # and later ones are refused up front
        render(kernel.package, plan, plan.passes[0])


def test_the_hang_backstop_names_itself(make_specs, monkeypatch):
    """The wall clock only backs the work budget up; when it does fire, it says so."""
    monkeypatch.setattr(render_module, "RENDER_TIME_BACKSTOP", -1.0)
    message, _ = _render(make_specs(**{GELU: GELU}), "")
    assert "RENDER_TIME_BACKSTOP" in message, message


def _manifest_with(tmp_path, raw):
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "manifest.json").write_text(json.dumps(raw))
    return pkg


def _variants_with_a_big_predicate(count: int) -> dict:
    raw = seed(GELU)
    raw.setdefault("derive", {})["p0"] = " or ".join(f"numel(shapes.X) == {j}" for j in range(60))
    raw["derive"]["p1"] = " or ".join(["p0"] * 4)  # about 1,500 nodes once inlined
    base = raw["variants"][1]
    raw["variants"][0]["priority"] = 1000
    raw["variants"] = [raw["variants"][0]]
    for i in range(count):
        v = copy.deepcopy(base)
        v["id"], v["priority"] = f"s{i}", i + 100
        v["when"] = v["when"] + [f"p1 or numel(shapes.X) == {i + 1000}"]
        raw["variants"].append(v)
    return raw


@pytest.mark.parametrize(
    "raw, fragment",
    [
        (_variants_with_a_big_predicate(200), "predicates add up to more than"),
        ({**seed(GELU), "derive": {f"r{i}": "1" for i in range(30000)}}, "JSON values"),
        ({**seed(GELU), "derive": {f"r{i}": "1" for i in range(3000)}}, "expressions in one manifest"),
    ],
    ids=["200-variants-x-1500-nodes", "30k-derive-rules", "3k-derive-rules"],
)
def test_expression_costs_are_bounded(tmp_path, raw, fragment):
    with pytest.raises(ConformanceError, match=fragment):
        load_kernel(_manifest_with(tmp_path, raw)).plan(profile=BASELINE, X=((8,), "float32"))
