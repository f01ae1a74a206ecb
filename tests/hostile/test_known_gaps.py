"""One test per engine gap the fuzzers found (strict xfails until the patch in issue 10's report is applied:
then they pass, the strict xfail turns into a failure, and the marker is to be removed)."""
from __future__ import annotations

import json

import pytest
from .gaps import gap_open

from conformance import ConformanceError, ExpressionError, load_kernel, BASELINE
from conformance.package import REPO_SPECS


def _xfail_while_open(name: str, patch: str):
    return pytest.mark.xfail(gap_open(name), strict=True, reason=f"open engine gap {name!r}: {patch}")


@_xfail_while_open("non-finite-literal", "conformance/expressions.py parse() must refuse non-finite numbers")
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


@_xfail_while_open("absent-without-place", "conformance/expressions.py Compiled.__call__ must fail on an Absent "
                                           "result inside its try (so the error gets the pointer)")
def test_output_rank_reading_an_absent_input_names_its_pointer(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    raw = json.loads((REPO_SPECS / "com.microsoft.FastGelu" / "manifest.json").read_text())
    raw["outputs"][0]["rank"] = "ranks.bias"
    (pkg / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ExpressionError) as info:
        load_kernel(pkg).plan(profile=BASELINE, X=((8,), "float32"))
    assert info.value.pointer == "/outputs/0/rank" and "manifest.json" in str(info.value)
