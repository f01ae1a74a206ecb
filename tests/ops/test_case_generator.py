"""The case generator on the new packages: the Ctx crash fixed for two non-primary inputs, and the record's row
data (|mean| / sigma up to 1e4) that tells a one-pass LayerNorm from a two-pass one."""

from __future__ import annotations

import pytest

import cases
from cases.conditions import Analysis
from cases.families import Ctx
from conformance.certify.checker import Checker
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import CaseFailed, verdict_for
from conformance.engine.package import load_package
from conformance.engine.planner import Planner

from .conftest import ADD, LAYERNORM, SOFTMAX


def test_ctx_handles_two_non_primary_inputs():
    m = load_package(LAYERNORM).manifest
    ctx = Ctx(m, Planner(m), Analysis(m))
    assert [s.role for s in ctx.others] == ["scale", "bias"]
    assert ctx.fit == {"scale": "match", "bias": "match"}
    args = ctx.call((3, 5), "float32").args()
    assert args == {"X": ((3, 5), "float32"), "scale": ((5,), "float32"), "bias": ((5,), "float32")}


@pytest.mark.parametrize("name", [LAYERNORM, SOFTMAX, ADD])
def test_every_variant_is_generated(name):
    package = load_package(name)
    selected = {c.expect["variant"] for c in cases.generate(package) if c.accepted}
    assert selected == {v.id for v in package.manifest.variants}


def test_generated_cases_catch_a_one_pass_layer_norm(one_pass, device):
    checker = Checker(ManifestImplementation(device.backend, device.adapter_filter, device.webgpu))
    caught = []
    for case in cases.generate(one_pass.package):
        if case.accepted and not case.heavy and case.family.startswith(("values", "conditions", "residues")):
            try:
                checker.check(case, one_pass.package, verdict_for(case))
            except CaseFailed as failure:
                caught.append((case.id, str(failure)[:200]))
    assert caught
