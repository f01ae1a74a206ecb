"""The reports of a run: one per column, built from the run's verdicts, with the cases that never ran, and the files.

A run of one column writes that column's report (:func:`conformance.certify.report.write`); a run of several writes
one file with every column's report and their matrix, whose Markdown (:func:`matrix_markdown`) is the matrix then
each column's failures, composed from the columns' data.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from conformance.certify import matrix, report, report_html
from conformance.certify.quote import cell, code_block, code_span
from conformance.config import WEBGPU

#: The statuses a report's Markdown lists under "## Failures".
FAILURES = ("failed", "xpassed", "not-run")


def column_reports(state, verdicts: list[dict], deselected_heavy: int, interrupted: bool = False) -> list[dict]:
    """One report per column of the run whose state (:class:`conformance.plugin.state.RunState`) is ``state``
    (verdicts of a single-column run carry no column)."""
    implementation = "manifest-runtime" if state.impl_name == "manifest" else state.impl_name
    out = []
    # every column a case names, even one whose every worker died before telling the controller about it
    slugs = sorted(set(state.columns) | {v["column"] for v in verdicts if v.get("column")})
    for slug in slugs or [""]:
        mine = [v for v in verdicts if v.get("column", "") == slug or len(slugs) <= 1]
        skipped = dict(Counter(v["detail"] for v in mine if v["status"] == "skipped"))
        col = state.columns.get(slug, {})
        left_out = [v for v in state.left_out if v.get("column", "") == slug or len(slugs) <= 1]
        data = report.build(mine, identity=state.identity, device=col.get("device"),
                            implementation=implementation, skipped_reasons=skipped,
                            deselected_heavy=deselected_heavy, interrupted=interrupted, weak=state.weak,
                            templates=state.templates, left_out=left_out)
        if col.get("error"):
            data.update(error=col["error"], conforms=False, result="does-not-conform")
        if state.fatal:
            data.update(error=state.fatal, conforms=False, result="nothing-checked")
        if slug:
            data["column"] = slug
        out.append(data)
    return out


def not_run(expected_ids, ran, why: str) -> list[dict]:
    """A ``not-run`` verdict for each test expected to run (node ids) that has no verdict in ``ran``."""
    verdicts = []
    for nodeid in sorted(expected_ids):
        case_id, slug = split_column(test_id_of(nodeid))
        if nodeid not in ran:
            verdicts.append({"id": case_id, "package": case_id.split("/")[0], "variant": "?", "dtype": "?",
                             "family": "?", "status": "not-run", "worst_ratio": None, **({"column": slug} if slug else {}),
                             "detail": why})
    return verdicts


def test_id_of(nodeid: str) -> str:
    """The parameter id of a node id: ``...::test_case[<id>]``, to which ``--dist loadgroup`` appends
    ``@<group>`` (the id itself may hold brackets and "@")."""
    if "[" not in nodeid or "]" not in nodeid:
        return nodeid
    return nodeid[nodeid.index("[") + 1:nodeid.rindex("]")]


def split_column(test_id: str) -> tuple[str, str]:
    """(case id, column slug or "") of a test id: a case id may hold several "+" (``X[4]+bias[4]``, ``~eps=1e+20``),
    a column's slug (``<webgpu>-<backend>[-<adapter>]``) none, so the column is what follows the last "+", if that
    is a slug."""
    head, plus, tail = test_id.rpartition("+")
    slug = rf"({'|'.join(map(re.escape, WEBGPU))})-[a-z0-9]+(-[^+\s]+)?"
    return (head, tail) if plus and re.fullmatch(slug, tail) else (test_id, "")


def write(path: Path, reports: list[dict], interrupted: bool) -> None:
    """The report files at ``path`` (JSON, Markdown and HTML beside it): one column's report, or every column's
    with their matrix."""
    if len(reports) == 1:
        report.write(reports[0], path)
        return
    grid = matrix.merge([(path, r) for r in reports])
    data = {"columns": reports, "matrix": grid, "interrupted": interrupted,
            "conforms": all(r["conforms"] for r in reports)}
    report.write_files(path, data, matrix_markdown(grid, reports),
                       report_html.page(reports, grid, title="Conformance matrix"))


def matrix_markdown(grid: dict, reports: list[dict]) -> str:
    """The Markdown of a run of several columns: the matrix, then, for each column with a failure, its failures
    under ``## Failures, <column>`` followed by what follows them in the column's own Markdown (its waivers; the
    not-applicable reasons, assertions and divergences of an implementation outside the device model).

    Composed from the reports' data, never cut out of their Markdown text. It belongs in
    ``conformance.certify.report`` beside :func:`~conformance.certify.report.markdown` (issue 52), where the two
    would share :func:`failure_lines`; until then ``tests/plugin/test_reporting.py`` checks that they agree."""
    parts = [matrix.markdown(grid)]
    for data in reports:
        if any(v["status"] in FAILURES for v in data["cases"]):
            # _outside_sections: the tail of report.markdown, used as it is until this function moves beside it
            parts.append("\n".join(["", f"## Failures, {data['column']}", *failure_lines(data)]) + "\n"
                         + report._outside_sections(data))
    return "".join(parts)


def failure_lines(data: dict) -> list[str]:
    """The lines of a report's Markdown under its ``## Failures`` heading: each failure with its whole message (a
    value failure's table of worst elements is the evidence), then the waivers."""
    lines = [""]
    for v in data["cases"]:
        if v["status"] not in FAILURES:
            continue
        lines += [f"- {code_span(v['id'])} ({v['status']})", ""] + code_block(v.get("detail") or "") + [""]
        if v.get("repro"):
            lines += [f"  standalone repro: {code_span(v['repro'])}", ""]
    if data["waivers"]:
        lines += ["", "## Waivers", "", "Failures that `--expectations` (or `--divergences=xfail`) waived: "
                  "the case failed as shown.", ""]
        for w in data["waivers"]:
            lines += [f"- {code_span(w['id'])}: waived by {code_span(w['pattern'] or '')} ({cell(w['reason'])})",
                      ""] + code_block(w["waived"]) + [""]
    return lines
