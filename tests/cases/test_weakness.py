"""``python -m cases --coverage`` reports where cases are weaker than they look, each with what to add."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cases
from cases import weakness
from cases.data import make_inputs
from cases.golden import CASES_DIR, load_matching_golden
from conformance.engine.package import REPO_SPECS, find_package_dirs, load_package
from conformance.ops import record_for, register, unregister
from tests.cases.conftest import ROOT
from tests.ops.third_party import outside_copy

SOFTMAX = "com.microsoft.Softmax"
OP = "com.example.Softmax"


def kinds_of(weak) -> dict[str, str]:
    return {w.kind: w.message for w in weak}


def kinds(report) -> dict[str, str]:
    return kinds_of(report.weak)


def test_no_shipped_package_has_a_case_that_compares_no_element():
    """Row ops' values-nonfinite cases once put a non-finite value in every row (24 cases of LayerNormalization and
    Softmax compared nothing); no golden case may leave every output element unconstrained."""
    for directory in find_package_dirs(REPO_SPECS):
        package = load_package(directory)
        loaded, why = load_matching_golden(CASES_DIR, package)
        assert loaded is not None, why  # the golden file is what the generator writes now
        assert "no-compare" not in kinds_of(weakness.of_package(package, loaded)), package.name


@pytest.mark.parametrize("name", [SOFTMAX, "com.microsoft.LayerNormalization"])
def test_row_ops_get_non_finite_values_in_every_row_but_the_last(name):
    """The rows with a non-finite value stay unconstrained (its propagation into the row), the last is compared."""
    package = load_package(ROOT / "specs" / name)
    found = [c for c in load_matching_golden(CASES_DIR, package)[0] if c.family == "values-nonfinite"]
    assert len(found) == (8 if "Layer" in name else 4)
    record = record_for(name)
    for case in found:
        x = make_inputs(case)["X"]
        rows = x.reshape(-1, x.shape[-1])
        assert len(rows) > 1 and all(not np.isfinite(r).all() for r in rows[:-1]) and np.isfinite(rows[-1]).all()
        with np.errstate(all="ignore"):
            y = record.compute(make_inputs(case), case.attributes or None)["Y"].reshape(rows.shape)
        assert np.isnan(y[:-1]).all() and np.isfinite(y[-1]).all(), case.id


@pytest.fixture
def outside(tmp_path):
    """Softmax's package under another author's op id, whose record the test registers."""
    yield load_package(outside_copy(ROOT / "specs" / SOFTMAX, tmp_path))
    unregister(OP)


def test_a_row_op_declared_elementwise_is_flagged(outside):
    register(dataclasses.replace(record_for(SOFTMAX), op=OP, structure="elementwise"))
    found = kinds(cases.coverage(outside))
    assert "row-dispatch-elementwise" in found, found
    assert "declares structure 'elementwise' but variants dispatch by rows" in found["row-dispatch-elementwise"]
    assert "declare structure='rows'" in found["row-dispatch-elementwise"]
    # declared elementwise, its non-finite cases fill every row: the fix named is the structure
    assert "declare structure='rows' in the op record" in found["no-compare"]


def test_a_rows_op_without_data_recipes_and_a_package_without_record_are_flagged(outside):
    found = kinds(cases.coverage(outside))
    assert set(found) == {"empty-family"} and "no op record for com.example.Softmax: values-op" in found["empty-family"]
    register(dataclasses.replace(record_for(SOFTMAX), op=OP, data=()))
    found = kinds(cases.coverage(outside))
    assert "rows-without-data" in found and "add DataRecipes" in found["rows-without-data"]
    assert "row-dispatch-elementwise" not in found
