"""The conformance report as one self-contained HTML page: a colour grid, each column's device, each failure.

Written beside the JSON and Markdown of ``--conformance-report`` and by ``merge --html``. No script, no network,
no external style sheet or font: the page opens the same from a CI artifact, a mail attachment or a phone.
Everything quoted from a report (case ids, messages, device strings) is escaped.
"""

from __future__ import annotations

import math
from collections import defaultdict
from html import escape

from conformance.certify.evidence import WEAK_NOTE, WEAK_TITLE, flag_lines, weak_of
from conformance.certify.outcomes import NOT_APPLICABLE

#: Cell states, worst first: a cell shows the worst state any of its cases has.
STATES = {
    "failed": ("#d73027", "a case failed"),
    "divergence": ("#fc8d59", "departs from the manifest's contract"),
    "not-run": ("#7f0000", "no result (interrupted or the worker died)"),
    "waived": ("#fee08b", "failures waived by an expectation"),
    "replanned": ("#74add1", "conforms, planned for this device (it lacks what the cases assume)"),
    "conforms": ("#1a9850", "every case passed"),
    NOT_APPLICABLE: ("#bdbdbd", "nothing the cases assert applies"),
    "skipped": ("#eeeeee", "skipped"),
}
FAILING = ("failed", "xpassed", "not-run")
DARK = {"failed", "not-run"}      # states whose colour needs white text

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
    if passed:
        return "replanned" if all(c.get("replanned") for c in passed) else "conforms"
    return NOT_APPLICABLE if NOT_APPLICABLE in statuses else "skipped"


def _column_name(report: dict, index: int) -> str:
    return report.get("column") or (report.get("device") or {}).get("webgpu") or report.get("implementation") \
        or f"column {index + 1}"


def _grid(columns: list[dict]) -> list[str]:
    cells: dict = defaultdict(lambda: defaultdict(list))
    for i, report in enumerate(columns):
        for case in report.get("cases", []):
            cells[(case["package"], case["variant"], case["dtype"])][i].append(case)
    legend = "".join(f'<span style="background:{colour}{";color:#fff" if state in DARK else ""}">'
                     f"{escape(state)}: {escape(text)}</span>" for state, (colour, text) in STATES.items())
    head = "".join(f"<th>({i + 1}) {escape(_column_name(r, i))}</th>" for i, r in enumerate(columns))
    rows = []
    for (package, variant, dtype), by_column in sorted(cells.items()):
        tds = []
        for i in range(len(columns)):
            cases = by_column.get(i, [])
            if not cases:
                tds.append('<td class="cell">-</td>')
                continue
            state = cell_state(cases)
            counts = defaultdict(int)
            for c in cases:
                counts[c["status"]] += 1
            text = escape(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
            first_failure = next((c["id"] for c in cases if c["status"] in FAILING), None)
            if first_failure:   # the cell links to its first failure below
                text = f'<a href="#{escape(_anchor(first_failure, i))}" style="color:inherit">{text}</a>'
            tds.append(f'<td class="cell" style="background:{STATES[state][0]}'
                       f'{";color:#fff" if state in DARK else ""}" title="{escape(state)}">{text}</td>')
        rows.append(f"<tr><td>{escape(package)}</td><td>{escape(variant)}</td><td>{escape(dtype)}</td>"
                    + "".join(tds) + "</tr>")
    return [f'<p class="legend">{legend}</p>', "<table><tr><th>package</th><th>variant</th><th>dtype</th>" + head
            + "</tr>", *rows, "</table>"]


def _anchor(case_id: str, column: int) -> str:
    return f"c{column}-{case_id}"


def _devices(columns: list[dict], sources: list[str] | None) -> list[str]:
    out = ["<table><tr><th>column</th><th>device</th><th>result</th><th>totals</th></tr>"]
    for i, report in enumerate(columns):
        dev = report.get("device") or {}
        shown = [f"<b>{escape(str(dev.get('adapter') or 'no adapter reported'))}</b>"]
        for key in ("webgpu", "backend", "type", "driver", "implementation", "provider", "user_agent"):
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
        out.append(f"<tr><td>({i + 1}) {escape(_column_name(report, i))}</td><td>{'<br>'.join(shown)}</td>"
                   f'<td class="result-{escape(result)}">{escape(result)}</td><td>{totals}</td></tr>')
    return out + ["</table>"]


def profile_svg(profile: list, width: int = 480, height: int = 90) -> str:
    """Bars of err/allowed over the output (log scale, 1e-3 up), the allowed level as a line: an inline SVG."""
    top = max([10.0] + [v for v in profile if v is not None and v > 0])
    span = math.log10(top) + 3

    def y(value: float) -> float:
        return height - height * (math.log10(max(value, 1e-3)) + 3) / span

    bar = width / max(1, len(profile))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="error divided by allowed over the output">',
             f'<rect width="{width}" height="{height}" fill="#fafafa" stroke="#ccc"/>']
    for i, value in enumerate(profile):
        x = i * bar
        if value is None:   # a non-finite error
            parts.append(f'<rect x="{x:.1f}" y="0" width="{max(bar - 0.5, 0.5):.1f}" height="{height}" '
                         f'fill="#7f0000"><title>element run {i}: non-finite</title></rect>')
        elif value >= 0:
            top_y = y(value)
            parts.append(f'<rect x="{x:.1f}" y="{top_y:.1f}" width="{max(bar - 0.5, 0.5):.1f}" '
                         f'height="{height - top_y:.1f}" fill="{"#d73027" if value > 1 else "#4575b4"}">'
                         f"<title>element run {i}: {value:.3g} x allowed</title></rect>")
    parts.append(f'<line x1="0" x2="{width}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" stroke="#000" '
                 f'stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    caption = (f'<br><small>err / allowed over the output in element order, log scale from 0.001 (dashed line: '
               f"allowed; largest {top:.3g}; dark: non-finite; blank: unconstrained)</small>")
    return "".join(parts) + caption


def _failures(columns: list[dict]) -> list[str]:
    out = []
    for i, report in enumerate(columns):
        for case in report.get("cases", []):
            if case["status"] not in FAILING and not (case["status"] == "xfailed"):
                continue
            where = f" in ({i + 1}) {escape(_column_name(report, i))}" if len(columns) > 1 else ""
            body = [f'<div class="failure" id="{escape(_anchor(case["id"], i))}"><h3><code>{escape(case["id"])}</code>'
                    f" {escape(case['status'])}{where}</h3>"]
            if case.get("divergence"):
                body.append(f"<p>divergence: {escape(case['divergence'])}</p>")
            body.append(f"<pre>{escape(case.get('detail') or '')}</pre>")
            profile = case.get("error_profile")
            if profile and profile.get("profile"):
                body.append(f"<p>output {escape(str(profile.get('role')))} of shape "
                            f"{escape(str(profile.get('shape')))}:</p>" + profile_svg(profile["profile"]))
            if case.get("rerun"):
                body.append(f"<p>rerun: <code>{escape(case['rerun'])}</code></p>")
            if case.get("repro"):
                body.append(f"<p>standalone repro: <code>{escape(case['repro'])}</code></p>")
            out.append("".join(body) + "</div>")
    return out


def _disagreements(matrix: dict | None) -> list[str]:
    items = (matrix or {}).get("disagreements") or []
    if not items:
        return []
    out = [f"<h2>Where the columns disagree ({len(items)} case(s))</h2><ul>"]
    for item in items:
        per = "; ".join(f"({int(i) + 1}) {escape(c['status'])}" + (f": {escape(c['detail'][0][:200])}"
                                                                   if c.get("detail") else "")
                        for i, c in sorted(item["columns"].items(), key=lambda kv: int(kv[0])))
        out.append(f"<li><code>{escape(item['id'])}</code>: {per}</li>")
    return out + ["</ul>"]


def _weak(columns: list[dict]) -> list[str]:
    """The generator's weakness flags (once) and each column's cases that compared no element."""
    nothing = [{**c, "column": c.get("column") or (_column_name(r, i) if len(columns) > 1 else None)}
               for i, r in enumerate(columns) for c in r.get("compared_nothing") or []]
    found = flag_lines(weak_of(columns), nothing)
    if not found:
        return []
    return [f'<h2 id="weak">{escape(WEAK_TITLE)}</h2><p>{escape(WEAK_NOTE)}.</p><ul>',
            *(f"<li>{escape(line)}</li>" for line in found), "</ul>"]


#: The page runs no script and loads nothing: whatever a report smuggled past the escaping could not run.
CSP = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
       'img-src data:; script-src \'none\'; base-uri \'none\'; form-action \'none\'">')


def page(columns: list[dict], matrix: dict | None = None, *, title: str = "Conformance report") -> str:
    """The page for one report (``columns=[report]``) or several columns (with their ``matrix``)."""
    failing = sum(1 for r in columns for c in r.get("cases", []) if c["status"] in FAILING)
    results = {r.get("result") or ("conforms" if r.get("conforms") else "does-not-conform") for r in columns}
    overall = "does-not-conform" if "does-not-conform" in results else sorted(results)[0] if results else "?"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', CSP,
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f'<p>Result: <b class="result-{escape(overall)}">{escape(overall)}</b>; {len(columns)} column(s), '
             f"{failing} failing case(s).</p>",
             "<h2>Columns</h2>", *_devices(columns, (matrix or {}).get("sources")),
             "<h2>Results</h2>", *_grid(columns), *_disagreements(matrix), *_weak(columns)]
    failures = _failures(columns)
    parts += [f"<h2>Failures ({len(failures)})</h2>", *failures] if failures else ["<h2>Failures</h2><p>none</p>"]
    return "\n".join(parts) + "\n</body></html>\n"
