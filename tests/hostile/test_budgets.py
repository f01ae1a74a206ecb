"""Real budgets for templates and expressions (issue 11, item 9): time measured inside long lines, every string
operation size-capped, a template size cap, a render budget per package, and compile and planning costs of a
manifest's expressions bounded (README, "Budgets")."""
from __future__ import annotations

import copy
import json
import time

import pytest

from conformance import BASELINE, ConformanceError, load_kernel
from conformance.gpu import render as render_module
from conformance.gpu.render import MAX_TEMPLATE, render
from tests.hostile.conftest import TEMPLATE, seed

GELU = "com.microsoft.Gelu"


def _render(specs, prefix: str):
    template = specs / GELU / TEMPLATE
    template.write_text(prefix + template.read_text())
    kernel = load_kernel(specs / GELU)
    plan = kernel.plan(profile=BASELINE, X=((8,), "float32"))
    start = time.perf_counter()
    with pytest.raises(ConformanceError) as info:
        render(kernel.package, plan, plan.passes[0])
    return str(info.value), time.perf_counter() - start


BOMBS = {  # a template prefix -> what the refusal says
    "nested-bigint-one-line": ("{{ " + "*".join(["(2**2000)"] * 120) + " }}\n", "integer of more than"),
    "square-chain-one-line": ("{% set a = 3**1000 %}{{ " + "*".join(["a"] * 40) + " }}\n", "integer of more than"),
    "center": ("{{ 'x'.center(10**9) }}\n", "too large"),
    "ljust-chain": ("{{ 'x'.ljust(1000000).ljust(1000000).ljust(1000000) ~ 'x'.ljust(1000000) }}\n", "longer than"),
    "replace": ("{{ ('ab' * 1000).replace('a', 'x' * 1000) }}\n", "longer than"),
    "join": ("{{ ('a' * 1000000).join(['b'] * 1000) }}\n", "longer than"),
    "expandtabs": ("{{ ('\\t' * 100000).expandtabs(1000000) }}\n", "longer than"),
    "one-long-line-of-work": ("{% set s = 'a' * 1000000 %}{{ [" + ", ".join(["s.replace('a', 'b') | length"] * 1500)
                              + "] | sum }}\n", "longer than 1 s"),
    "too-large": ("//" + "x" * MAX_TEMPLATE + "\n", f"larger than {MAX_TEMPLATE}"),
    "inf-literal": ("{% set x = 1e999 %}{{ x }}\n", "not finite"),
}


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_template_bombs_are_refused_within_the_budget(make_specs, kind):
    prefix, fragment = BOMBS[kind]
    message, elapsed = _render(make_specs(**{GELU: GELU}), prefix)
    assert fragment in message, message[-300:]
    assert elapsed < 3, f"{kind}: {elapsed:.1f} s"


def test_a_package_has_a_total_render_budget(make_specs, monkeypatch):
    monkeypatch.setattr(render_module, "PACKAGE_RENDER_BUDGET", 0.0)
    specs = make_specs(**{GELU: GELU})
    kernel = load_kernel(specs / GELU)
    plan = kernel.plan(profile=BASELINE, X=((8,), "float32"))
    render(kernel.package, plan, plan.passes[0])                # the first render spends the budget
    with pytest.raises(ConformanceError, match="PACKAGE_RENDER_BUDGET"):
        render(kernel.package, plan, plan.passes[0])


def _manifest_with(tmp_path, raw):
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "manifest.json").write_text(json.dumps(raw))
    return pkg


def _variants_with_a_big_predicate(count: int) -> dict:
    raw = seed(GELU)
    raw.setdefault("derive", {})["p0"] = " or ".join(f"numel(shapes.X) == {j}" for j in range(60))
    raw["derive"]["p1"] = " or ".join(["p0"] * 4)         # about 1,500 nodes once inlined
    base = raw["variants"][1]
    raw["variants"][0]["priority"] = 1000
    raw["variants"] = [raw["variants"][0]]
    for i in range(count):
        v = copy.deepcopy(base)
        v["id"], v["priority"] = f"s{i}", i + 100
        v["when"] = v["when"] + [f"p1 or numel(shapes.X) == {i + 1000}"]
        raw["variants"].append(v)
    return raw


@pytest.mark.parametrize("raw, fragment", [
    (_variants_with_a_big_predicate(200), "predicates add up to more than"),
    ({**seed(GELU), "derive": {f"r{i}": "1" for i in range(30000)}}, "JSON values"),
    ({**seed(GELU), "derive": {f"r{i}": "1" for i in range(3000)}}, "expressions in one manifest"),
], ids=["200-variants-x-1500-nodes", "30k-derive-rules", "3k-derive-rules"])
def test_expression_costs_are_bounded(tmp_path, raw, fragment):
    start = time.perf_counter()
    with pytest.raises(ConformanceError, match=fragment):
        load_kernel(_manifest_with(tmp_path, raw)).plan(profile=BASELINE, X=((8,), "float32"))
    assert time.perf_counter() - start < 5
