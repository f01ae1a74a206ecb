"""The mutation tool's reduction classes: lane- and invocation-dropping reductions and single-step missing
barriers are made for both row ops, render to different shaders, and the races run under --stress."""

from __future__ import annotations

from collections import Counter

import pytest

from conformance.engine.package import load_package
from conformance.shader.stress import DEFAULT_RUNS
from conformance.tools.mutate.mutants import mark_unrendered, package_mutants
from conformance.tools.mutate.runner import stress_runs


@pytest.fixture(scope="module")
def row_mutants():
    out = {}
    for name in ("com.microsoft.Softmax", "com.microsoft.LayerNormalization"):
        package = load_package(name)
        mutants = [m for m in package_mutants(package) if m.kind in ("lane-dropped", "invocation-dropped", "race")]
        mark_unrendered(package.root, mutants)
        out[package.manifest.name] = mutants
    return out


def test_every_class_is_made_for_both_row_ops(row_mutants):
    softmax = Counter(m.kind for m in row_mutants["Softmax"] if m.status == "pending")
    layernorm = Counter(m.kind for m in row_mutants["LayerNormalization"] if m.status == "pending")
    assert softmax == {"lane-dropped": 2, "invocation-dropped": 8, "race": 8}
    assert layernorm == {"lane-dropped": 1, "invocation-dropped": 5, "race": 8}
    # LayerNorm takes no maximum, and since issue 38 its template carries no max branch for it: nothing unrendered
    unrendered = [m.description for m in row_mutants["LayerNormalization"] if m.status == "equivalent"]
    assert unrendered == [], unrendered
    assert not any("folded = max(" in m.description for m in row_mutants["LayerNormalization"])


def test_only_races_and_removed_barriers_run_under_stress(row_mutants):
    runs = {m.kind: stress_runs(m) for ms in row_mutants.values() for m in ms}
    assert runs == {"lane-dropped": 0, "invocation-dropped": 0, "race": DEFAULT_RUNS}
