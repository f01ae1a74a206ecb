"""A tolerance model may depend on the plan: with a ``plan`` keyword it receives the variant, the tunables and the
constants of the manifest's plan for the call; a model without it is called as before."""

from __future__ import annotations

import dataclasses

import pytest

import cases
from conformance.certify.checker import Checker
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import verdict_for
from conformance.engine.package import load_package
from conformance.ops import PlanContext, record_for, register, unregister
from conformance.ops.record import takes_plan
from tests.gate.conftest import GELU, ROOT
from tests.ops.third_party import outside_copy

OP = "com.example.Gelu"


@pytest.fixture
def package(tmp_path):
    yield load_package(outside_copy(ROOT / "specs" / GELU, tmp_path))
    unregister(OP)


def test_the_tolerance_sees_the_plan_of_the_call(package):
    seen = []
    builtin = record_for(GELU)

    def tolerance(dtype, inputs=None, attributes=None, *, plan=None):
        seen.append(plan)
        return builtin.tolerance(dtype, inputs, attributes)

    register(dataclasses.replace(builtin, op=OP, tolerance=tolerance))
    case = next(
        c
        for c in cases.generate(package)
        if c.accepted and c.expect["variant"] == "vec4" and c.tunables and not c.heavy and c.inputs["X"][1] == "float32"
    )
    Checker(ManifestImplementation(device="vulkan")).check(case, package, verdict_for(case))
    assert seen and isinstance(seen[0], PlanContext)
    assert seen[0].variant == "vec4" and seen[0].tunables == {**package.manifest.tunables, **case.tunables}
    assert "vec4" in seen[0].constants


def test_a_model_without_plan_is_called_as_before():
    calls = []
    record = dataclasses.replace(
        record_for(GELU),
        tolerance=lambda dtype, inputs=None, attributes=None: (
            calls.append(dtype) or record_for(GELU).tolerance(dtype, inputs, attributes)
        ),
    )
    assert not takes_plan(record.tolerance) and takes_plan(lambda d, i, a, **kw: None)
    record.tolerance_for("float32", None, None, PlanContext("vec4"))
    assert calls == ["float32"]
