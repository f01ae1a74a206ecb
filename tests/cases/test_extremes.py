"""values-extremes: each row op's maxima and large negatives reach every lane, invocation and iteration of the
planned reduction, derived from the plan, in a bounded number of cases (no device needed)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

import cases
from cases.data import Recipe, make_inputs
from cases.extremes import EXTREME, MAX_CASES, RowLayout, extreme_positions, invocation_order, layout_of, row_count
from conformance.engine.call import make_call
from conformance.engine.package import load_package
from conformance.engine.planner import Planner
from conformance.engine.profile import BASELINE

LAYERNORM, SOFTMAX = "com.microsoft.LayerNormalization", "com.microsoft.Softmax"


@pytest.fixture(scope="module")
def generated():
    return {name: cases.generate(load_package(name)) for name in (SOFTMAX, LAYERNORM)}


def extremes_of(case_list):
    return [c for c in case_list if "values_extremes" in c.markers]


def test_the_layout_comes_from_the_plan():
    m = load_package(SOFTMAX).manifest
    plan = Planner(m).plan(make_call(m, {"X": ((8, 512), "float32")}, BASELINE, None))
    assert layout_of(plan, "X", 512) == RowLayout(512, 4, plan.passes[0].dispatch.workgroup_size)
    scalar = Planner(m).plan(make_call(m, {"X": ((8, 253), "float32")}, BASELINE, None))
    assert layout_of(scalar, "X", 253).width == 1 and scalar.variant == "scalar"


def test_invocation_order_starts_with_every_tree_partner_and_covers_all():
    order = invocation_order(48)
    assert order[:6] == [47, 0, 1, 46, 2, 45] and sorted(order) == list(range(48))


@pytest.mark.parametrize("name", [SOFTMAX, LAYERNORM])
def test_every_lane_invocation_and_iteration_holds_a_maximum(name, generated):
    """Per variant and dtype, over its extremes cases: the maximum sits in every lane, every iteration, and (where
    the rows fit the budget) every invocation of the plan's workgroup."""
    m = load_package(name).manifest
    planner = Planner(m)
    seen: dict[tuple, set] = {}
    for case in extremes_of(generated[name]):
        shape = case.inputs["X"][0]
        plan = planner.plan(make_call(m, case.call_args(), case.profile, None))
        layout = layout_of(plan, "X", shape[-1])
        key = (plan.variant, case.inputs["X"][1], layout)
        for high, _ in case.data.extremes:
            item, lane = divmod(high, layout.width)
            seen.setdefault(key, set()).add((item % layout.workgroup, item // layout.workgroup, lane))
    assert {k[0] for k in seen} == {v.id for v in m.variants}  # every variant has its extremes
    for (variant, _, layout), slots in seen.items():
        assert {lane for *_, lane in slots} == set(range(layout.width)), variant
        assert {it for _, it, _ in slots} == set(range(layout.iterations)), variant
        reached = {inv for inv, _, _ in slots}
        assert {0, layout.active - 1} <= reached, variant
        if row_count(layout) >= layout.active:
            assert reached == set(range(layout.active)), variant


@pytest.mark.parametrize("name", [SOFTMAX, LAYERNORM])
def test_the_case_count_is_bounded(name, generated):
    ext = extremes_of(generated[name])
    m = load_package(name).manifest
    per = Counter((c.expect["variant"], c.inputs["X"][1]) for c in ext)
    assert max(per.values()) <= MAX_CASES and len(per) == len(m.variants) * 2  # every variant, both dtypes
    assert sum(math.prod(c.inputs["X"][0]) for c in ext) < 600_000


def test_the_values_are_placed_and_survive_the_golden_round_trip(generated):
    case = next(c for c in extremes_of(generated[SOFTMAX]) if c.inputs["X"][0] == (8, 512))
    assert Recipe.from_dict(case.data.as_dict()) == case.data
    x = make_inputs(case)["X"].astype(np.float64)
    for row, (high, low) in enumerate(case.data.extremes):
        assert x[row, high] == EXTREME == x[row].max() and x[row, low] == -EXTREME == x[row].min()
        assert np.abs(np.delete(x[row], [high, low])).max() < 10  # the rest: N(0, 1)


def test_positions_that_do_not_fit_the_rows_are_refused_with_the_case_id(generated):
    case = next(c for c in extremes_of(generated[SOFTMAX]) if c.inputs["X"][0] == (8, 512))
    bad = Recipe.from_dict({**case.data.as_dict(), "extremes": [[600, 1]] * 8})
    with pytest.raises(ValueError, match=r"Softmax/f32/X\[8,512\]/vec4#extremes0: extremes .* do not fit"):
        make_inputs(type(case)(**{**case.__dict__, "data": bad}))


def test_positions_differ_for_maximum_and_negative():
    layout = RowLayout(512, 4, 32)
    positions = extreme_positions(layout, row_count(layout))
    assert len(positions) == 32 and all(a != b for a, b in positions)
