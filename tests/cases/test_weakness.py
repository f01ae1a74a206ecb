"""``python -m cases --coverage`` reports where cases are weaker than they look, each with what to add."""

from __future__ import annotations

import dataclasses

import pytest

import cases
from conformance.engine.package import load_package
from conformance.ops import record_for, register, unregister
from tests.cases.conftest import ROOT
from tests.ops.third_party import outside_copy

SOFTMAX = "com.microsoft.Softmax"
OP = "com.example.Softmax"


def kinds(report) -> dict[str, str]:
    return {w.kind: w.message for w in report.weak}


def test_a_case_that_compares_no_element_is_flagged():
    """Softmax's values-nonfinite cases put a non-finite value in every row: nothing of them is compared."""
    report = cases.coverage(load_package(ROOT / "specs" / SOFTMAX))
    found = kinds(report)
    assert "no-compare" in found, report.weak
    assert "Softmax/f32/X[4,8]/vec4#nonfinite" in found["no-compare"]
    assert "give the case rows without special values" in found["no-compare"]
    assert "WEAK: no-compare: " in report.report()


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
