"""The Markdown of a run of several columns (conformance.certify.report.matrix.run_markdown): the matrix, then each
failing column's failures, composed from the reports' data with the column report's own pieces (issue 52), never cut
out of their Markdown text."""

from __future__ import annotations

from pathlib import Path

from conformance.certify import report
from conformance.certify.report import failure_lines, matrix, outside_sections


def _verdict(case_id, status, **fields):
    return {
        "id": case_id,
        "package": "com.microsoft.Gelu",
        "variant": "vec4",
        "dtype": "float32",
        "family": "f",
        "status": status,
        "worst_ratio": None,
        "detail": "",
        "expected_variant": "vec4",
        "evidence": None,
        "empty": False,
        **fields,
    }


def _column(slug, verdicts, skipped_reasons=None):
    data = report.build(
        verdicts,
        identity=[],
        device={"adapter": "llvmpipe"},
        implementation="manifest-runtime",
        skipped_reasons=skipped_reasons or {},
        deselected_heavy=0,
    )
    data["column"] = slug
    return data


FAILING = [
    _verdict(
        "Gelu/f32/X[5]/vec4",
        "failed",
        detail="output Y differs\n  worst elements",
        worst_ratio=9.0,
        repro="repro/g1.py",
    ),
    _verdict("Gelu/f32/X[6]/vec4", "xfailed", detail="known", waiver={"pattern": "*X[6]*", "reason": "r"}),
    _verdict("Gelu/f32/X[7]/vec4", "not-run", detail="no result (the worker running it died)"),
    _verdict(
        "Gelu/f32/X[8]/vec4",
        "failed",
        detail="rejects: no",
        divergence="rejects-accepted",
        checks={"contract": "failed"},
    ),
    _verdict("Gelu/f32/X[9]/vec4", "not-applicable", detail="only on a smaller profile"),
    _verdict("Gelu/f32/X[4]/vec4", "passed", worst_ratio=0.1),
]


def test_a_columns_section_is_what_follows_failures_in_its_own_markdown():
    """One writer of a column's failures and waivers: its own Markdown and the run's section use the same lines."""
    col = _column("wgpu-vulkan", FAILING)
    tail = report.markdown(col).split("\n## Failures\n", 1)[1]
    assert "\n".join(failure_lines(col)) + "\n" + outside_sections(col) == tail
    assert "## Waivers" in tail and "## Divergences" in tail and "## Not applicable" in tail


def test_each_failing_column_follows_the_matrix_under_its_own_heading():
    failing, clean = _column("wgpu-vulkan", FAILING), _column("dawn-vulkan", [_verdict("Gelu/f32/X[4]/vec4", "passed")])
    grid = matrix.merge([(Path("r.json"), r) for r in (failing, clean)])
    text = matrix.run_markdown(grid, [failing, clean])
    assert text.startswith(matrix.markdown(grid))
    assert text.count("\n## Failures, ") == 1
    assert text[len(matrix.markdown(grid)) :] == (
        "\n## Failures, wgpu-vulkan\n" + "\n".join(failure_lines(failing)) + "\n" + outside_sections(failing)
    )


def test_a_reason_that_reads_as_the_failures_heading_is_not_where_the_section_starts():
    """Cut out of the Markdown text at its first "## Failures", a skip reason (or a package's root, or anything
    quoted before the failures) holding those words took the column's section from there."""
    col = _column("wgpu-vulkan", FAILING[:1], skipped_reasons={"## Failures: none, all passed": 1})
    grid = matrix.merge([(Path("r.json"), r) for r in (col, _column("dawn-vulkan", FAILING[:1]))])
    section = matrix.run_markdown(grid, [col])[len(matrix.markdown(grid)) :]
    assert section.startswith("\n## Failures, wgpu-vulkan\n\n- `Gelu/f32/X[5]/vec4` (failed)")
    assert "none, all passed" not in section
