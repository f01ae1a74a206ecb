"""Planted copies of Softmax and LayerNormalization whose reductions drop lanes or invocations: the extremes
cases (values-extremes) fail each; two of them pass every other generated case, which is why the family exists."""

from __future__ import annotations

import pytest

from conformance.certify.checker import Checker
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import CaseFailed, CaseSkipped, verdict_for
from conformance.engine.package import load_package
from conformance.tools.mutate.mutants import package_mutants
from tests.conftest import golden_cases

from .conftest import LAYERNORM, SOFTMAX

#: (package, mutant kind, text of its description, line of the template it changes)
PLANTED = [
    (SOFTMAX, "lane-dropped", "ignores lanes z and w", None),
    (SOFTMAX, "invocation-dropped", "skips the workgroup's reduction", "L131:"),  # cached rows
    (SOFTMAX, "invocation-dropped", "skips the workgroup's reduction", "L151:"),  # looped rows
    (SOFTMAX, "invocation-dropped", "sum drops the last invocation's partial", "L138:"),
    (LAYERNORM, "invocation-dropped", "sum drops the last invocation's partial", "L127:"),  # cached mean
    (LAYERNORM, "invocation-dropped", "sum drops the last invocation's partial", "L153:"),  # looped variance
]


@pytest.fixture(scope="module")
def generated():
    return {name: [c for c in golden_cases(name) if c.accepted and not c.heavy] for name in (SOFTMAX, LAYERNORM)}


@pytest.fixture(scope="module")
def impl(device):
    return ManifestImplementation(device.backend, device.adapter_filter, device.webgpu)


def planted(name, kind, words, line, tmp_path):
    package = load_package(name)
    found = [
        m
        for m in package_mutants(package)
        if m.kind == kind and words in m.description and (line is None or f"/{line}" in m.id)
    ]
    assert len(found) == 1, [m.id for m in found]
    return load_package(found[0].materialize(package.root, tmp_path / package.root.name))


def first_failure(impl, package, case_list) -> str | None:
    checker = Checker(impl)
    for case in case_list:
        try:
            checker.check(case, package, verdict_for(case))
        except CaseSkipped:
            continue
        except CaseFailed as err:
            return f"{case.id}: {err}"
    return None


@pytest.mark.parametrize("name, kind, words, line", PLANTED)
def test_the_extremes_cases_fail_a_reduction_that_drops_lanes_or_invocations(
    name, kind, words, line, impl, generated, tmp_path
):
    copy = planted(name, kind, words, line, tmp_path)
    extremes = [c for c in generated[name] if "values_extremes" in c.markers]
    failure = first_failure(impl, copy, extremes)
    assert failure is not None and "#extremes" in failure and "differs from the reference" in failure


@pytest.mark.parametrize(
    "kind, words, line",
    [
        ("lane-dropped", "ignores lanes z and w", None),
        ("invocation-dropped", "skips the workgroup's reduction", "L151:"),
    ],
)
def test_without_the_extremes_these_softmax_copies_pass_every_case(kind, words, line, impl, generated, tmp_path):
    """Softmax is invariant to the subtracted maximum: only a large value in a dropped lane or slot shows it."""
    copy = planted(SOFTMAX, kind, words, line, tmp_path)
    others = [c for c in generated[SOFTMAX] if "values_extremes" not in c.markers]
    assert first_failure(impl, copy, others) is None
