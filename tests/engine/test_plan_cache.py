"""Plans remembered per manifest (conformance.engine.planner): the same call gets the same plan or the same refusal
without planning again, any difference the plan depends on plans afresh, and the memory is bounded in entries."""

from __future__ import annotations

import pytest

from conformance import BASELINE
from conformance.engine import planner as planner_module
from conformance.engine.call import make_call
from conformance.engine.planner import Planner, call_key
from conformance.errors import ContractError, NoVariantError
from tests.engine.conftest import NO_F16, kernel_from


@pytest.fixture
def counted(fastgelu_raw, monkeypatch):
    """A fresh manifest's planner, and a list that grows by one per call actually planned."""
    manifest = kernel_from(fastgelu_raw).manifest
    planned = []
    real = Planner._plan

    def plan(self, call):
        planned.append(call)
        return real(self, call)

    monkeypatch.setattr(Planner, "_plan", plan)
    return manifest, planned


def _call(manifest, profile=BASELINE, **args):
    return make_call(manifest, args or {"X": ((8,), "float32")}, profile)


def test_the_same_call_is_planned_once_by_every_planner_of_the_manifest(counted):
    manifest, planned = counted
    first = Planner(manifest).plan(_call(manifest))
    again = Planner(manifest).plan(_call(manifest))
    assert again is first and len(planned) == 1


def test_what_the_plan_depends_on_plans_afresh(counted):
    manifest, planned = counted
    plans = [
        Planner(manifest).plan(_call(manifest, **a))
        for a in (
            {"X": ((8,), "float32")},
            {"X": ((8,), "float16")},
            {"X": ((4, 2), "float32")},
            {"X": ((8,), "float32"), "bias": ((8,), "float32")},
        )
    ]
    Planner(manifest).plan(_call(manifest, NO_F16))  # another profile
    assert len(planned) == 5
    assert len({p.variant for p in plans}) > 1


def test_keys_tell_apart_values_python_calls_equal(counted):
    manifest, _ = counted
    base = _call(manifest)
    keys = {
        call_key(type(base)(base.inputs, base.profile, base.tunables, {"epsilon": v}))
        for v in (1, 1.0, True, 0.0, -0.0)
    }
    assert len(keys) == 5


def test_a_refusal_is_raised_again_as_a_fresh_copy(counted):
    manifest, planned = counted
    planner = Planner(manifest)
    errors = []
    for _ in range(2):
        with pytest.raises(ContractError) as info:
            planner.plan(_call(manifest, X=((7,), "float32"), bias=((3,), "float32")))  # bias of another length
        errors.append(info.value)
    assert len(planned) == 1
    a, b = errors
    assert a is not b and str(a) == str(b) and a.reason == b.reason and a.argument == b.argument
    if isinstance(a, NoVariantError):
        assert a.failures == b.failures and a.failures is not b.failures


def test_the_memory_is_bounded_in_entries(counted, monkeypatch):
    manifest, planned = counted
    monkeypatch.setattr(planner_module, "MAX_PLANS", 2)
    planner = Planner(manifest)
    for n in (8, 16, 24, 8):
        planner.plan(_call(manifest, X=((n,), "float32")))
    assert len(planned) == 4  # (8,) was the oldest of three: it went, and was planned again
    assert len(planner_module._PLANS[manifest]) == 2


def test_a_calls_scope_is_made_once_for_asking_and_planning(counted, monkeypatch):
    manifest, _ = counted
    made = []
    real = planner_module.scope_for

    def scope_for(*args, **kwargs):
        made.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(planner_module, "scope_for", scope_for)
    scope = Planner(manifest).scope(_call(manifest))
    Planner(manifest).plan(_call(manifest))
    assert Planner(manifest).scope(_call(manifest)) is scope
    assert len(made) == 2  # the outputs' scope (no output shapes yet), then the call's


def test_the_scopes_kept_are_bounded_in_entries(counted, monkeypatch):
    manifest, _ = counted
    monkeypatch.setattr(planner_module, "MAX_SCOPES", 2)
    planner = Planner(manifest)
    first = planner.scope(_call(manifest, X=((8,), "float32")))
    for n in (16, 24):
        planner.scope(_call(manifest, X=((n,), "float32")))
    assert len(planner_module._SCOPES[manifest]) == 2
    assert planner.scope(_call(manifest, X=((8,), "float32"))) is not first
