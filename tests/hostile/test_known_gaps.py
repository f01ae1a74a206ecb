"""Regression tests for the engine gaps the fuzzers found (both fixed in conformance/expressions.py)."""

from __future__ import annotations

import json

import pytest

from conformance import BASELINE, ConformanceError, ExpressionError, load_kernel
from conformance.engine.package import REPO_SPECS


def test_non_finite_number_in_a_json_manifest_is_refused_with_its_pointer(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    text = (REPO_SPECS / "com.microsoft.Gelu" / "manifest.json").read_text()
    raw = json.loads(text)
    raw["variants"][0]["when"][0] = "__HUGE__"
    (pkg / "manifest.json").write_text(json.dumps(raw).replace('"__HUGE__"', "1e400"))  # json reads inf
    with pytest.raises(ConformanceError) as info:
        load_kernel(pkg).plan(profile=BASELINE, X=((8,), "float32"))
    assert "/variants/0/when/0" in str(info.value)


def test_output_rank_reading_an_absent_input_names_its_pointer(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    raw = json.loads((REPO_SPECS / "com.microsoft.FastGelu" / "manifest.json").read_text())
    raw["outputs"][0]["rank"] = "ranks.bias"
    (pkg / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ExpressionError) as info:
        load_kernel(pkg).plan(profile=BASELINE, X=((8,), "float32"))
    assert info.value.pointer == "/outputs/0/rank" and "manifest.json" in str(info.value)
