"""Reports of several devices, implementations and machines as one matrix (``conformance merge``, ``--device=all``).

One column per report (implementation, WebGPU implementation, adapter, backend, driver), one row per package,
variant and dtype; a cell counts passed / failed / skipped / not-applicable cases there. Reports of different
package digests certify different packages: merging them is refused unless asked for.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.certify.evidence import WEAK_NOTE, WEAK_TITLE, assess, cell_line, flag_lines, weak_of
from conformance.certify.outcomes import NOT_APPLICABLE, STATUSES
from conformance.certify.report import failing, failure_lines, outside_sections, quote, result_of, summarize
from conformance.certify.report.check import check_report
from conformance.errors import ConformanceError
from conformance.files import read_named

#: The cap on one report read by ``merge`` (a matrix of every column of a large run is a few MiB).
MAX_REPORT = 256 << 20


def load(path: Path) -> dict:
    try:
        data = json.loads(read_named(Path(path), MAX_REPORT))
    except (ValueError, RecursionError) as exc:
        raise ConformanceError(f"{path}: cannot read the report: {exc}") from None
    single = isinstance(data, dict) and isinstance(data.get("summary"), dict) and "packages" in data
    columns = data.get("columns") if isinstance(data, dict) else None
    several = isinstance(columns, list) and columns and all(isinstance(c, dict) and "summary" in c for c in columns)
    if not single and not several:
        raise ConformanceError(f"{path}: not a conformance report (expected the JSON of --conformance-report)")
    check_report(data, str(path))
    if several:
        return {**data, "columns": [recomputed(c) for c in columns]}
    return recomputed(data)


def recomputed(data: dict) -> dict:
    """``data`` with what a report says of its own cases (totals, summary, result, what was left unchecked) derived
    again from its cases, by the functions the report is built with (``report.result_of``, ``evidence.assess``):
    a report whose cases failed never shows conforming, whatever its header says. The header's result, where it
    differs, is kept as ``stated_result`` for ``merge`` to name."""
    cases = data["cases"]
    totals = {s: sum(1 for c in cases if c["status"] == s) for s in STATUSES}
    evidence = assess(cases, data.get("left_out") or [])  # heavy cases left out name their cells too
    stopped = data.get("interrupted") or data.get("error")  # a partial run, a device that never opened
    result = "does-not-conform" if stopped else result_of(totals, evidence)
    out = {
        **data,
        "totals": totals,
        "summary": summarize(cases),
        "result": result,
        "conforms": result in ("conforms", "conforms-with-waivers"),
        "unchecked": evidence["unchecked"],
        "not_runnable": evidence["not_runnable"],
        "compared_nothing": evidence["compared_nothing"],
    }
    if data.get("result") != result:
        out["stated_result"] = data.get("result")
    return out


def inconsistent_lines(reports: list[tuple[Path, dict]]) -> list[str]:
    """One line per column whose header states another result than its cases give (a forged or edited report)."""
    return [
        f"{source_name(path, data)} states {str(data['stated_result'])[:80]!r} but its cases give "
        f"{data['result']!r}: the matrix shows what its cases give"
        for path, data in flatten(reports)
        if "stated_result" in data
    ]


def column(data: dict) -> dict:
    dev = data.get("device") or {}
    return {
        "implementation": data.get("implementation"),
        "column": data.get("column"),
        "webgpu": dev.get("webgpu"),
        "adapter": dev.get("adapter"),
        "backend": dev.get("backend"),
        "driver": dev.get("driver"),
        "features": dev.get("features"),
        "result": data.get("error")
        and f"error: {' '.join(data['error'].split())}"
        or ("conforms" if data.get("conforms") else "does not conform"),
        "totals": data.get("totals"),
    }


def label(col: dict) -> str:
    if not col.get("adapter"):  # a column whose device never opened
        return f"{col['implementation']}, column {col.get('column') or '?'}"
    via = f" via {col['webgpu']}" if col.get("webgpu") else ""
    return f"{col['implementation']}{via}: {col['adapter']}" + (f" ({col['backend']})" if col.get("backend") else "")


def digests(data: dict) -> dict:
    return {p["package"]: p.get("files") for p in data.get("packages", [])}


def flatten(reports: list[tuple[Path, dict]]) -> list[tuple[Path, dict]]:
    """A report of several columns (``--device=all``) counts as one report per column."""
    return [(path, col) for path, data in reports for col in (data.get("columns") or [data])]


def source_name(path: Path, data: dict) -> str:
    """A report as messages name it: its file, and the column for a report of several (``--device=all``)."""
    return f"{path} (column {data['column']})" if data.get("column") else str(path)


def missing_packages(reports: list[tuple[Path, dict]]) -> dict[str, list[str]]:
    """For each report that lacks some of the packages the others certify: those packages."""
    everything = sorted(set().union(*(digests(d) for _, d in reports)))
    missing = {source_name(p, d): [pkg for pkg in everything if pkg not in digests(d)] for p, d in reports}
    return {source: pkgs for source, pkgs in missing.items() if pkgs}


def merge(reports: list[tuple[Path, dict]], *, allow_different_packages: bool = False) -> dict:
    """One matrix of the reports' columns. The package files (sha256) are compared only for the packages two
    reports share; a package that some reports lack is listed under ``missing_packages``, its cells there empty."""
    reports = flatten(reports)
    first_path, first = reports[0]
    for path, data in reports[1:]:
        shared = sorted(set(digests(data)) & set(digests(first)))
        changed = [pkg for pkg in shared if digests(data)[pkg] != digests(first)[pkg]]
        if changed and not allow_different_packages:
            raise ConformanceError(
                f"{source_name(path, data)} certifies other package files than "
                f"{source_name(first_path, first)} (sha256 digests differ) for "
                f"{', '.join(changed)}: the matrix would compare different kernels; pass "
                f"--allow-different-packages to merge anyway"
            )
    columns = [column(d) for _, d in reports]
    rows: dict = {}
    for i, (_, data) in enumerate(reports):
        for pkg, variants in data["summary"].items():
            for variant, dtypes in variants.items():
                for dtype, cell in dtypes.items():
                    rows.setdefault((pkg, variant, dtype), [None] * len(reports))[i] = cell
    mark_not_runnable(rows, [d for _, d in reports])
    return {
        "columns": columns,
        "sources": [str(p) for p, _ in reports],
        "missing_packages": missing_packages(reports),
        "disagreements": disagreements([d for _, d in reports]),
        "weak": weak_of(d for _, d in reports),
        "compared_nothing": [
            {**c, "column": f"({i + 1})"} for i, (_, d) in enumerate(reports) for c in d.get("compared_nothing") or []
        ],
        "not_runnable": [
            {**e, "column": f"({i + 1})"} for i, (_, d) in enumerate(reports) for e in d.get("not_runnable") or []
        ],
        "rows": [{"package": p, "variant": v, "dtype": d, "cells": cells} for (p, v, d), cells in sorted(rows.items())],
    }


def mark_not_runnable(rows: dict, reports: list[dict]) -> None:
    """A column's cells it could not run (its report's ``not_runnable``: an f16 call on a browser without
    ``shader-f16`` is planned into a rejection, so its variant's row has no case there) say so, instead of the
    empty cell of a package the report lacks."""
    for i, data in enumerate(reports):
        for entry in data.get("not_runnable") or []:
            if entry.get("variant"):
                cells = rows.setdefault((entry["package"], entry["variant"], entry["dtype"]), [None] * len(reports))
                cells[i] = cells[i] or {"not_runnable": entry["cases"]}


def disagreements(reports: list[dict]) -> list[dict]:
    """Cases whose outcome differs between columns (a shader one compiler accepts and another rejects, values
    within tolerance on one device only...): a finding, case by case, with each column's status and first line."""
    by_case: dict[str, dict[int, dict]] = {}
    for i, data in enumerate(reports):
        if data.get("error"):
            continue  # a column that could not certify anything says so once, not per case
        for case in data.get("cases", []):
            by_case.setdefault(case["id"], {})[i] = case
    out = []
    for case_id, seen in sorted(by_case.items()):
        if len(seen) > 1 and len({c["status"] for c in seen.values()}) > 1:
            out.append(
                {
                    "id": case_id,
                    "columns": {
                        i: {"status": c["status"], "detail": (c.get("detail") or "").strip().splitlines()[:1]}
                        for i, c in seen.items()
                    },
                }
            )
    return out


#: The two cells without results, as the matrix's legend explains them.
CELL_LEGEND = (
    "`-`: no case of this row in this column (its report lacks the package, or its device planned them into another row); `not runnable here (N)`: "
    "the column's device cannot run these N cases (planned into a rejection: it lacks a feature or limit "
    "they assume; listed under *Not runnable on this device*)"
)


def cell_text(cell: dict | None) -> str:
    if cell is None:
        return "-"
    if set(cell) == {"not_runnable"}:
        return f"not runnable here ({cell['not_runnable']})"
    parts = [
        f"{cell.get(k, 0)} {sym}"
        for k, sym in (
            ("passed", "passed"),
            ("failed", "failed"),
            ("skipped", "skipped"),
            (NOT_APPLICABLE, "n/a"),
            ("xfailed", "xfailed"),
        )
        if cell.get(k)
    ]
    return ", ".join(parts) or "0"


def missing_lines(matrix: dict) -> list[str]:
    """One line per report that lacks packages others certify."""
    return [
        f"{source} has no cases of {', '.join(pkgs)} (its cells for them are empty)"
        for source, pkgs in (matrix.get("missing_packages") or {}).items()
    ]


def markdown(matrix: dict) -> str:
    cols = matrix["columns"]
    lines = ["# Conformance matrix", ""]
    for i, col in enumerate(cols, 1):  # everything quoted from a report is escaped (quote.py)
        lines.append(
            f"{i}. **{quote.cell(label(col))}**, driver {quote.cell(col['driver'])}, features "
            f"{quote.cell(', '.join(map(str, col.get('features') or [])) or 'none')}: "
            f"{quote.cell(col['result'])} (from {quote.code_span(matrix['sources'][i - 1])})"
        )
    lines += [""] * bool(matrix.get("missing_packages")) + [f"- {line}" for line in missing_lines(matrix)]
    lines += ["", CELL_LEGEND + "."]
    lines += [
        "",
        "| package | variant | dtype | " + " | ".join(f"({i})" for i in range(1, len(cols) + 1)) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |",
    ]
    for row in matrix["rows"]:
        lines.append(
            f"| {quote.cell(row['package'])} | {quote.cell(row['variant'])} | {quote.cell(row['dtype'])} | "
            + " | ".join(cell_text(c) for c in row["cells"])
            + " |"
        )
    if matrix.get("not_runnable"):
        lines += [
            "",
            "## Not runnable on this device",
            "",
            "Per column: every case was planned into a rejection for its device, skipped or not applicable.",
            "",
        ]
        lines += [f"- {e['column']} {quote.cell(cell_line(e))}" for e in matrix["not_runnable"]]
    if matrix.get("disagreements"):
        lines += ["", f"## Where the columns disagree ({len(matrix['disagreements'])} case(s))", ""]
        for item in matrix["disagreements"]:
            per = "; ".join(
                f"({i + 1}) {quote.cell(c['status'])}"
                + (f": {quote.cell(c['detail'][0][:160])}" if c["detail"] else "")
                for i, c in sorted(item["columns"].items())
            )
            lines.append(f"- {quote.code_span(item['id'])}: {per}")
    weak = flag_lines(matrix.get("weak") or [], matrix.get("compared_nothing") or [])
    if weak:
        lines += ["", f"## {WEAK_TITLE}", "", f"{WEAK_NOTE}.", ""] + [f"- {quote.cell(line)}" for line in weak]
    return "\n".join(lines) + "\n"


def run_markdown(matrix: dict, reports: list[dict]) -> str:
    """The Markdown of a run of several columns: the matrix, then, for each column with a failure, its failures
    under ``## Failures, <column>`` followed by what follows them in the column's own Markdown (its waivers; the
    not-applicable reasons, assertions and divergences of an implementation outside the device model).

    Composed from the reports' data with the column report's own pieces, never cut out of its Markdown text (a
    reason or a package root quoting "## Failures" would move the cut)."""
    parts = [markdown(matrix)]
    for data in reports:
        if failing(data):
            parts.append(
                "\n".join(["", f"## Failures, {data['column']}", *failure_lines(data)]) + "\n" + outside_sections(data)
            )
    return "".join(parts)
