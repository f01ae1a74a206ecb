"""The conformance report as one self-contained HTML page: a colour grid, each column's device, each failure.

Written beside the JSON and Markdown of ``--conformance-report`` and by ``merge --html``. No script, no network,
no external style sheet or font: the page opens the same from a CI artifact, a mail attachment or a phone.
Everything quoted from a report (case ids, messages, device strings) is escaped.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape

from conformance.certify.evidence import WEAK_NOTE, WEAK_TITLE, cell_line, flag_lines, weak_of
from conformance.certify.outcomes import NOT_APPLICABLE
from conformance.certify.report.failures import anchor
from conformance.certify.report.failures import section as failures_section

#: Cell states, worst first: a cell shows the worst state any of its cases has.
STATES = {
    "failed": ("#d73027", "a case failed"),
    "divergence": ("#fc8d59", "departs from the manifest's contract"),
    "not-run": ("#7f0000", "no result (interrupted or the worker died)"),
    "waived": ("#fee08b", "failures waived by an expectation"),
    "replanned": ("#74add1", "conforms, planned for this device (it lacks what the cases assume)"),
    "conforms": ("#1a9850", "every case passed"),
    "not-runnable": (
        "#c2a5cf",
        "not runnable on this device: every case planned into a rejection (it lacks a "
        "feature or limit the cases assume)",
    ),
    NOT_APPLICABLE: ("#bdbdbd", "nothing the cases assert applies"),
    "skipped": ("#eeeeee", "skipped"),
}
FAILING = ("failed", "xpassed", "not-run")
DARK = {"failed", "not-run"}  # states whose colour needs white text

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
td.cell{text-align:center;font-size:12px;min-width:6em}
.legend span{display:inline-block;padding:1px 8px;margin:0 4px 4px 0;border:1px solid #999;font-size:12px}
pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px;white-space:pre}
.failure{border-left:4px solid #d73027;padding-left:10px;margin:1.2em 0}
.result-conforms{color:#1a9850}.result-does-not-conform{color:#d73027}.result-conforms-with-waivers{color:#b8860b}
code{background:#f0f0f0;padding:0 3px}
"""


def cell_state(cases: list[dict]) -> str:
    """The worst state among ``cases`` (those of one package, variant, dtype and column)."""
    statuses = {c["status"] for c in cases}
    if any(c["status"] in ("failed", "xpassed") and c.get("divergence") for c in cases):
        return "divergence"
    for status in ("failed", "not-run"):
        if status in statuses:
            return status
    if "xpassed" in statuses:
        return "failed"
    if "xfailed" in statuses:
        return "waived"
    passed = [c for c in cases if c["status"] == "passed"]
    if passed and all(_moved_to_rejection(c) for c in passed):
        return "not-runnable"
    if passed:
        return "replanned" if all(_changed_here(c) for c in passed) else "conforms"
    return NOT_APPLICABLE if NOT_APPLICABLE in statuses else "skipped"


def _changed_here(case: dict) -> bool:
    """Whether planning for this device changed what the case asserts ("expectation unchanged" changed nothing)."""
    return bool(case.get("replanned")) and not case["replanned"].startswith("expectation unchanged")


def _moved_to_rejection(case: dict) -> bool:
    """A call the golden file accepts that this device must reject: it ran nothing of its variant here."""
    return bool(case.get("expected_variant")) and case["variant"] == "rejected"


def row_of(case: dict) -> tuple:
    """The grid row of a case: the variant its golden file accepts it as (where a device plans it into a
    rejection, it stays in that variant's row, marked not runnable), else its own."""
    return case["package"], case.get("expected_variant") or case["variant"], case["dtype"]


#: What a cell without cases says (and the legend with it).
NO_CASES = (
    "-",
    "no case of this row in this column (its report lacks the package, or its device planned them into another row)",
)


def _cell_note(state: str, cases: list[dict]) -> str:
    """The cell's second line: the worst err/allowed of its value-checked cases, or that it cannot run here."""
    if state == "not-runnable":
        return "<br><small>not runnable here</small>"
    ratios = [c["worst_ratio"] for c in cases if isinstance(c.get("worst_ratio"), (int, float))]
    if not ratios:
        return ""
    worst = max(ratios)
    return f"<br><small>worst {worst:.3g} x allowed</small>"


def _column_name(report: dict, index: int) -> str:
    return (
        report.get("column")
        or (report.get("device") or {}).get("webgpu")
        or report.get("implementation")
        or f"column {index + 1}"
    )


def _grid(columns: list[dict]) -> list[str]:
    cells: dict = defaultdict(lambda: defaultdict(list))
    for i, report in enumerate(columns):
        for case in report.get("cases", []):
            cells[row_of(case)][i].append(case)
    legend = "".join(
        f'<span style="background:{colour}{";color:#fff" if state in DARK else ""}">'
        f"{escape(state)}: {escape(text)}</span>"
        for state, (colour, text) in STATES.items()
    )
    legend += f"<span>{escape(NO_CASES[0])}: {escape(NO_CASES[1])}</span>"
    head = "".join(f"<th>({i + 1}) {escape(_column_name(r, i))}</th>" for i, r in enumerate(columns))
    rows = []
    for (package, variant, dtype), by_column in sorted(cells.items()):
        tds = []
        for i in range(len(columns)):
            cases = by_column.get(i, [])
            if not cases:
                tds.append(f'<td class="cell" title="{escape(NO_CASES[1])}">{escape(NO_CASES[0])}</td>')
                continue
            state = cell_state(cases)
            counts = defaultdict(int)
            for c in cases:
                counts[c["status"]] += 1
            text = escape(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
            first_failure = next((c["id"] for c in cases if c["status"] in FAILING), None)
            if first_failure:  # the cell links to its first failure below
                text = f'<a href="#{escape(anchor(first_failure, i))}" style="color:inherit">{text}</a>'
            tds.append(
                f'<td class="cell" style="background:{STATES[state][0]}'
                f'{";color:#fff" if state in DARK else ""}" title="{escape(state)}">{text}'
                f"{_cell_note(state, cases)}</td>"
            )
        rows.append(
            f"<tr><td>{escape(package)}</td><td>{escape(variant)}</td><td>{escape(dtype)}</td>" + "".join(tds) + "</tr>"
        )
    return [
        f'<p class="legend">{legend}</p>',
        "<table><tr><th>package</th><th>variant</th><th>dtype</th>" + head + "</tr>",
        *rows,
        "</table>",
    ]


def _devices(columns: list[dict], sources: list[str] | None) -> list[str]:
    out = ["<table><tr><th>column</th><th>device</th><th>result</th><th>totals</th></tr>"]
    for i, report in enumerate(columns):
        dev = report.get("device") or {}
        shown = [f"<b>{escape(str(dev.get('adapter') or 'no adapter reported'))}</b>"]
        for key in (
            "webgpu",
            "backend",
            "type",
            "driver",
            "implementation",
            "provider",
            "browser",
            "onnxruntime-web",
            "user_agent",
        ):
            if dev.get(key) not in (None, "", "?"):
                shown.append(f"{escape(key)}: {escape(str(dev[key]))}")
        if dev.get("features"):
            shown.append("features: " + escape(", ".join(map(str, dev["features"]))))
        limits = dev.get("limits") or {}
        if limits:
            shown.append("limits: " + escape(", ".join(f"{k} {v}" for k, v in sorted(limits.items()))))
        if report.get("error"):
            shown.append(f"<b>error:</b> {escape(str(report['error']))}")
        if sources:
            shown.append(f"from <code>{escape(sources[i])}</code>")
        result = report.get("result") or ("conforms" if report.get("conforms") else "does-not-conform")
        totals = ", ".join(f"{escape(str(n))} {escape(str(s))}" for s, n in (report.get("totals") or {}).items() if n)
        out.append(
            f"<tr><td>({i + 1}) {escape(_column_name(report, i))}</td><td>{'<br>'.join(shown)}</td>"
            f'<td class="result-{escape(result)}">{escape(result)}</td><td>{totals}</td></tr>'
        )
    return out + ["</table>"]


def _disagreements(matrix: dict | None) -> list[str]:
    items = (matrix or {}).get("disagreements") or []
    if not items:
        return []
    out = [f"<h2>Where the columns disagree ({len(items)} case(s))</h2><ul>"]
    for item in items:
        per = "; ".join(
            f"({int(i) + 1}) {escape(c['status'])}" + (f": {escape(c['detail'][0][:200])}" if c.get("detail") else "")
            for i, c in sorted(item["columns"].items(), key=lambda kv: int(kv[0]))
        )
        out.append(f"<li><code>{escape(item['id'])}</code>: {per}</li>")
    return out + ["</ul>"]


def _weak(columns: list[dict]) -> list[str]:
    """The generator's weakness flags (once) and each column's cases that compared no element."""
    nothing = [
        {**c, "column": c.get("column") or (_column_name(r, i) if len(columns) > 1 else None)}
        for i, r in enumerate(columns)
        for c in r.get("compared_nothing") or []
    ]
    found = flag_lines(weak_of(columns), nothing)
    if not found:
        return []
    return [
        f'<h2 id="weak">{escape(WEAK_TITLE)}</h2><p>{escape(WEAK_NOTE)}.</p><ul>',
        *(f"<li>{escape(line)}</li>" for line in found),
        "</ul>",
    ]


#: The page runs no script and loads nothing: whatever a report smuggled past the escaping could not run.
CSP = (
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; script-src 'none'; base-uri 'none'; form-action 'none'\">"
)


#: The report's sections of cells it could not rest on (the Markdown report's too): key, heading, note.
EVIDENCE_SECTIONS = (
    (
        "not_runnable",
        "Not runnable on this device",
        "every case was planned into a rejection for this device, skipped or not applicable",
    ),
    ("unchecked", "Not checked", "no case of these passed with its values checked, so the result cannot be conforms"),
)


def _evidence(columns: list[dict]) -> list[str]:
    """Per column, the cells it could not run and those left unchecked (each column its own: a browser without
    shader-f16 cannot run the f16 cells another column checked)."""
    out = []
    for key, title, note in EVIDENCE_SECTIONS:
        entries = [(i, e) for i, r in enumerate(columns) for e in r.get(key) or []]
        if not entries:
            continue
        out.append(f'<h2 id="{key.replace("_", "-")}">{escape(title)}</h2><p>{escape(note.capitalize())}.</p><ul>')
        out += [
            f"<li>{f'({i + 1}) {escape(_column_name(columns[i], i))}: ' if len(columns) > 1 else ''}"
            f"{escape(cell_line(e))}</li>"
            for i, e in entries
        ]
        out.append("</ul>")
    return out


def page(columns: list[dict], matrix: dict | None = None, *, title: str = "Conformance report") -> str:
    """The page for one report (``columns=[report]``) or several columns (with their ``matrix``)."""
    failing = sum(1 for r in columns for c in r.get("cases", []) if c["status"] in FAILING)
    results = {r.get("result") or ("conforms" if r.get("conforms") else "does-not-conform") for r in columns}
    overall = "does-not-conform" if "does-not-conform" in results else sorted(results)[0] if results else "?"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        CSP,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p>Result: <b class="result-{escape(overall)}">{escape(overall)}</b>; {len(columns)} column(s), '
        f"{failing} failing case(s).</p>",
        "<h2>Columns</h2>",
        *_devices(columns, (matrix or {}).get("sources")),
        "<h2>Results</h2>",
        *_grid(columns),
        *_evidence(columns),
        *_disagreements(matrix),
        *_weak(columns),
    ]
    parts += failures_section(columns, _column_name)
    return "\n".join(parts) + "\n</body></html>\n"
