"""The mutation tool's fault-detection operators (issue 38): early returns dropped and negated, loop bounds,
initial values +-1, comparisons in template tags, every `{% if %}` forced true and false; scores per template."""

from __future__ import annotations

import re

from conformance.engine.package import load_package
from conformance.tools.mutate.equivalence import argue
from conformance.tools.mutate.mutants import Mutant, template_mutants
from conformance.tools.mutate.report import markdown, summarize

TEMPLATE = "softmax-multirow.wgsl.jinja"


def mutants():
    pkg = load_package("com.microsoft.Softmax@2")
    text = (pkg.root / TEMPLATE).read_text()
    return text, template_mutants("Softmax", pkg.name, TEMPLATE, text)


def test_every_if_of_the_template_is_forced_true_and_false_once():
    text, ms = mutants()
    tags = re.findall(r"\{%-?\s*(?:el)?if\s", text)
    forced = [m for m in ms if m.kind == "branch"]
    assert len(forced) == 2 * len(tags) and len({m.id for m in forced}) == len(forced)
    for m in forced:
        mutated = m._apply(text)
        assert mutated != text and re.search(r"\{%-? (el)?if (true|false) -?%\}", mutated)


def test_early_returns_are_dropped_and_negated():
    text, ms = mutants()
    descriptions = {m.description.split(" (line")[0] for m in ms if m.kind in ("early-return", "row-index")}
    assert "the early return `if (group * {{ R }}u >= params.rows)` dropped" in descriptions
    assert "the early return `if (group * {{ R }}u >= params.rows)` negated" in descriptions
    assert "the early return `if (row >= params.rows)` negated" in descriptions
    # the one-row path's drop is the row-index operator's own mutant: one mutant per change
    assert sum("if (row >= params.rows) { return; }" in m.old and m.new == "" for m in ms) == 1


def test_initial_values_loop_starts_and_tag_comparisons_move_by_one():
    text, ms = mutants()
    kinds = {m.kind for m in ms}
    assert {"initial", "jinja-bound"} <= kinds
    assert any(m.kind == "initial" and m.old == "0" and m.new == "1" for m in ms)
    assert any(m.kind == "initial" and m.new == "(t) + 1u" for m in ms)
    assert any(m.kind == "jinja-bound" and m.old == " <= " and m.new == " < " for m in ms)
    # a bound `<` of a for loop is the bounds operator's (`<` -> `<=` on each code line): no second copy
    changes = [m._apply(text) for m in ms]
    assert len(changes) == len(set(changes))
    # none inside a comment
    comments = [m.span() for m in re.finditer(r"\{#.*?#\}", text, flags=re.S)]
    for m in ms:
        start = next(i for i, (a, b) in enumerate(zip(text, m._apply(text))) if a != b)
        assert not any(a <= start < b for a, b in comments), m.id


def test_the_multirow_early_return_drop_is_argued_equivalent():
    _, ms = mutants()
    drop = [
        m
        for m in ms
        if m.kind == "early-return"
        and m.description.startswith("the early return `if (group * {{ R }}u >= params.rows)` dropped")
    ]
    negated = [m for m in ms if m.kind == "early-return" and "negated" in m.description]
    argue("Softmax", drop + negated)
    assert drop and all(m.status == "equivalent" and "`live`" in m.equivalence for m in drop)
    assert all(m.status == "pending" for m in negated)


def test_the_report_scores_each_template():
    ms = [
        Mutant("S/tpl/a", "com.microsoft.Softmax@2", TEMPLATE, "branch", "a", status="killed", killed_by="c"),
        Mutant("S/tpl/b", "com.microsoft.Softmax@2", TEMPLATE, "branch", "b", status="survived"),
        Mutant("S/tpl/c", "com.microsoft.Softmax@2", TEMPLATE, "branch", "c", status="equivalent", equivalence="why"),
        Mutant(
            "S/manifest/d", "com.microsoft.Softmax@2", "manifest.json", "derive", "d", status="killed", killed_by="c"
        ),
    ]
    result = summarize(ms, {}, 1.0, 1)
    assert result["templates"][f"com.microsoft.Softmax@2 {TEMPLATE}"] == {
        "mutants": 3,
        "killed": 1,
        "survived": 1,
        "equivalent": 1,
        "alternative": 0,
        "kill_rate": 0.5,
    }
    assert f"| com.microsoft.Softmax@2 {TEMPLATE} | 3 | 1 | 1 | 1 | 0 | 50.0% |" in markdown(result)
