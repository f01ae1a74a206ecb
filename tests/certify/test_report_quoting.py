"""Reports quote what they show and write strict JSON (issue 28, reports): a case id or a message with a newline,
a backtick, HTML or an ANSI escape injects no heading, markup or terminal control, and is listed once; a NaN
output's ratio is null, never ``Infinity``; names with a trailing newline and op ids too long for a file name are
refused by the manifest's schema."""

from __future__ import annotations

import copy
import json

import pytest

from conformance.certify import report
from conformance.certify.report.quote import code_span, control_free
from conformance.engine.manifest import Manifest
from conformance.engine.package import REPO_SPECS
from conformance.errors import ManifestError
from conformance.plugin import RunState

HOSTILE = "Gelu/f32/X[5]/vec4\n`\n# Result: **conforms**\n<script>alert(1)</script>\x1b[2J\x1b[31m"


def _verdict(case_id, status="failed", detail="", ratio=None):
    return {
        "id": case_id,
        "package": "com.microsoft.Gelu",
        "variant": "vec4",
        "dtype": "float32",
        "family": "f",
        "status": status,
        "worst_ratio": ratio,
        "detail": detail,
        "expected_variant": "vec4",
        "evidence": None,
        "empty": False,
    }


def _build(verdicts):
    return report.build(
        verdicts,
        identity=[],
        device={"adapter": "x"},
        implementation="manifest-runtime",
        skipped_reasons={},
        deselected_heavy=0,
    )


def test_a_hostile_case_id_and_message_inject_nothing_into_the_markdown():
    md = report.markdown(_build([_verdict(HOSTILE, detail="```\n## Result: **conforms**\n" + HOSTILE)]))
    lines = md.splitlines()
    assert [line for line in lines if line.startswith("Result:")] == ["Result: **does not conform**  "]
    assert not [line for line in lines if line.startswith("#") and "Result:" in line]  # no heading injected
    assert "\x1b" not in md
    # the id: one list item, all on one line, as a code span (whose HTML CommonMark shows as text)
    items = [line for line in lines if line.startswith("- ") and "Gelu/f32/X[5]/vec4" in line]
    assert len(items) == 1 and items[0].startswith("- `` Gelu/f32/X[5]/vec4\\n`\\n# Result"), items
    assert all(line.startswith(("  ", "- `` ")) for line in lines if "<script>" in line)  # only in code
    fence = next(line for line in lines if line.strip().startswith("````"))  # longer than the ``` inside
    assert fence.strip() == "````"


def test_code_spans_and_terminal_lines_show_control_characters():
    assert code_span("a`b\nc") == "`` a`b\\nc ``"
    assert control_free("red\x1b[31m\r") == "red\\x1b[31m\\x0d"


def test_a_nan_ratio_is_written_as_strict_json(tmp_path):
    data = _build(
        [_verdict("Gelu/f32/X[5]/vec4", ratio=float("inf")), _verdict("Gelu/f32/X[6]/vec4", ratio=float("nan"))]
    )
    path = report.write(data, tmp_path / "r.json")[0]

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    loaded = json.loads(path.read_text(), parse_constant=refuse)
    assert {c["worst_ratio"] for c in loaded["cases"]} == {None}


def test_a_test_run_again_replaces_its_verdict_instead_of_doubling_it():
    class Config:
        def getoption(self, name, default=None):
            return {"device": "vulkan", "impl": "manifest"}.get(name, default)

    state = RunState(Config())
    state.record("t.py::test_case[a]", _verdict("a"))
    state.record("t.py::test_case[a]", _verdict("a", status="passed"))
    assert [v["status"] for v in state.verdicts] == ["passed"]


@pytest.mark.parametrize("field, value", [("name", "Gelu\n"), ("domain", "com.microsoft\n")])
def test_names_with_a_trailing_newline_are_refused(field, value):
    raw = json.loads((REPO_SPECS / "com.microsoft.Gelu" / "manifest.json").read_text())
    raw[field] = value
    with pytest.raises(ManifestError, match=f"/{field}"):
        Manifest(raw, file="manifest.json")


def test_a_variant_id_with_a_trailing_newline_is_refused():
    raw = json.loads((REPO_SPECS / "com.microsoft.Gelu" / "manifest.json").read_text())
    raw["variants"][0]["id"] = "vec4\n"
    with pytest.raises(ManifestError, match="/variants/0/id"):
        Manifest(raw, file="manifest.json")


def test_an_op_id_too_long_for_a_file_name_is_refused():
    raw = json.loads((REPO_SPECS / "com.microsoft.Gelu" / "manifest.json").read_text())
    long = copy.deepcopy(raw)
    long["domain"], long["name"] = "d" * 128, "N" * 127  # each schema-valid; 256 together
    with pytest.raises(ManifestError, match="255 bytes"):
        Manifest(long, file="manifest.json")
    Manifest(raw, file="manifest.json")


def test_the_matrix_markdown_quotes_what_it_takes_from_reports():
    from conformance.certify.report import matrix

    hostile = "Gelu/f32/X[8]/vec4\n# Result: **conforms**\x1b[31m|`"
    col = {
        "implementation": "x",
        "webgpu": "wgpu",
        "adapter": "A <b>",
        "backend": "Vulkan",
        "driver": "d|1",
        "features": ["f"],
        "result": "conforms",
        "column": None,
        "totals": {},
    }
    grid = {
        "columns": [col, col],
        "sources": ["a.json", "b`.json"],
        "missing_packages": {},
        "rows": [{"package": "P|Q", "variant": "v*", "dtype": "float32", "cells": [None, None]}],
        "disagreements": [
            {
                "id": hostile,
                "columns": {0: {"status": "passed", "detail": []}, 1: {"status": "failed", "detail": ["<script>|`x"]}},
            }
        ],
    }
    text = matrix.markdown(grid)
    assert "\n# Result" not in text and "\x1b" not in text and "<script>" not in text and "<b>" not in text
    assert "P\\|Q" in text and "d\\|1" in text and text.count("\n- ") == 1
