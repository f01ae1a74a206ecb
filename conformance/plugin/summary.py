"""The ``conformance`` section of pytest's terminal summary: what ran where, from which golden files, what was
planned for the device, and each column's result. Every line is written with its control characters shown, never
sent (a reason can come from a package or a driver)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from conformance.certify import evidence, report
from conformance.certify.report import quote
from conformance.certify.repro import index as repro_index


def write(terminalreporter, state) -> None:
    """The section, from the run's state (:class:`conformance.plugin.state.RunState`); none for a run that neither
    recorded a verdict nor has a result."""
    if not (state.verdicts or state.results):
        return
    tr = _Quoted(terminalreporter)
    tr.section("conformance")
    for slug, col in sorted(state.columns.items()):
        dev, mine = col.get("device") or {}, [v for v in state.verdicts if v.get("column", "") == slug]
        name = f"column {slug}: " if len(state.columns) > 1 else ""
        if dev.get("adapter"):
            tr.write_line(f"{name}device: {report.device_line(dev)}")
        if col.get("error"):
            tr.write_line(f"{name}ERROR: {col['error']}")
        if len(state.columns) > 1:
            tr.write_line("  cases: " + _counts(mine))
    for note in state.column_notes:
        tr.write_line(f"left out: {note}")
    for source in state.case_sources:
        tr.write_line(f"cases of {source}")
    tr.write_line("cases: " + (_counts(state.verdicts) or "none ran"))
    skipped = Counter(v["detail"] for v in state.verdicts if v["status"] == "skipped")
    for reason, n in skipped.items():
        tr.write_line(f"skipped {n}: {reason}")
    for change, n in report.replanned(state.verdicts).items():
        tr.write_line(f"planned for this device {n}: {change}")
    if state.impl_name != "manifest":
        tr.write_line(f"implementation: {state.impl_name}")
        for check, totals in report.check_totals(state.verdicts).items():
            tr.write_line(f"  {check}: " + ", ".join(f"{n} {s}" for s, n in totals.items() if n))
        for kind, cases in report.divergences(state.verdicts).items():
            tr.write_line(f"  divergence {kind}: {len(cases)} case(s)")
    heavy = state.heavy_deselected()
    if heavy:
        tr.write_line(f"heavy cases deselected: {heavy} (run them with --run-heavy)")
    if state.compilations:
        tr.write_line(
            f"shader compilations: {sum(state.compilations.values())} (over {len(state.compilations)} process(es))"
        )
    for line in evidence.flag_lines(state.weak, []):  # once, whatever the columns
        tr.write_line(f"weak: {line}")
    _results(tr, state)
    path = state.config.getoption("conformance_report")
    if path:
        tr.write_line(f"report: {path}, {Path(path).with_suffix('.md')} and {Path(path).with_suffix('.html')}")


def _results(tr, state) -> None:
    """Each column's result, with what it could not check; then the repros written, if any."""
    for data in state.results:
        name = f"column {data['column']}: " if len(state.results) > 1 else ""
        tr.write_line(f"{name}result: {report.RESULTS[data['result']]}")
        if state.fatal:
            tr.write_line(f"  ERROR: {state.fatal}")
        elif data["result"] == "nothing-checked" and not data["cases"]:
            tr.write_line("  no conformance case was selected (-k, -m, --deselect or the heavy filter left none)")
        for entry in data["unchecked"]:
            tr.write_line(f"  not checked: {evidence.cell_line(entry)}")
        for line in evidence.flag_lines([], data["compared_nothing"]):
            tr.write_line(f"  {line}")
    if state.repro_index is not None:
        tr.write_line(repro_index.summary_line(state.repro_index))


def _counts(verdicts) -> str:
    """``N status, ...`` by status, sorted by status."""
    counts = Counter(v["status"] for v in verdicts)
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


class _Quoted:
    """The terminal reporter, writing every line with control characters shown, never sent (ANSI escapes in a
    reason that came from a package or a driver)."""

    def __init__(self, tr):
        self.tr = tr

    def section(self, title: str) -> None:
        self.tr.section(title)

    def write_line(self, line: str) -> None:
        self.tr.write_line(quote.control_free(line))
