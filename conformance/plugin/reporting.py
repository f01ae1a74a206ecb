"""The reports of a run: one per column, built from the run's verdicts, with the cases that never ran, and the files.

A run of one column writes that column's report (:func:`conformance.certify.report.write`); a run of several writes
one file with every column's report and their matrix, whose Markdown
(:func:`conformance.certify.report.matrix.run_markdown`) is the matrix then each column's failures. What a report
says is composed in ``conformance.certify.report``; this module only gathers the run's data for it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from conformance.certify import report
from conformance.certify.report import html as report_html
from conformance.certify.report import matrix
from conformance.config import WEBGPU


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
        data = report.build(
            mine,
            identity=state.identity,
            device=col.get("device"),
            implementation=implementation,
            skipped_reasons=skipped,
            deselected_heavy=deselected_heavy,
            interrupted=interrupted,
            weak=state.weak,
            templates=state.templates,
            left_out=left_out,
        )
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
            verdicts.append(
                {
                    "id": case_id,
                    "package": case_id.split("/")[0],
                    "variant": "?",
                    "dtype": "?",
                    "family": "?",
                    "status": "not-run",
                    "worst_ratio": None,
                    **({"column": slug} if slug else {}),
                    "detail": why,
                }
            )
    return verdicts


def test_id_of(nodeid: str) -> str:
    """The parameter id of a node id: ``...::test_case[<id>]``, to which ``--dist loadgroup`` appends
    ``@<group>`` (the id itself may hold brackets and "@")."""
    if "[" not in nodeid or "]" not in nodeid:
        return nodeid
    return nodeid[nodeid.index("[") + 1 : nodeid.rindex("]")]


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
    data = {
        "columns": reports,
        "matrix": grid,
        "interrupted": interrupted,
        "conforms": all(r["conforms"] for r in reports),
    }
    report.write_files(
        path, data, matrix.run_markdown(grid, reports), report_html.page(reports, grid, title="Conformance matrix")
    )
