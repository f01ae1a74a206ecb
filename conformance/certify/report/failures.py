"""The HTML report's failures: grouped by cause, each group with its worst case's message and plots.

Identical failures (the same column, op, kind, dtype and message with its numbers as N, as ``--repro-dir`` groups
them) are one block: its cases listed with their worst err/allowed and rerun command, the worst one shown in full
(message, plots), the others' messages folded. A value failure has two plots: err/allowed over the output in
element order, and against the input value (an activation that fails for x < -4 shows it at a glance); each bar
says what it aggregates, and a strip under the bars gives the share of its elements out of tolerance (a bar is its
elements' largest error: one bad element makes it as tall as all of them).
"""

from __future__ import annotations

import math
import re
from html import escape

#: Statuses the page lists as failures (waived ones too, marked so).
LISTED = ("failed", "xpassed", "not-run", "xfailed")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d+(\.\d+)?([eE][-+]?\d+)?")
STRIP = 8  # px: the share-out-of-tolerance strip under a plot's bars


def anchor(case_id: str, column: int) -> str:
    """The id of a case's entry on the page (a grid cell links to its first failure)."""
    return f"c{column}-{case_id}"


def cause(case: dict) -> tuple[str, str]:
    """(kind, signature) of a failure: the divergence or "values" / "failure", and the first line of its message
    less the case id, numbers as N."""
    first = (case.get("detail") or "").strip().splitlines()[:1]
    text = first[0] if first else ""
    if text.startswith(f"{case['id']}: "):
        text = text[len(case["id"]) + 2 :]
    kind = case.get("divergence") or ("values" if case.get("error_profile") else "failure")
    return kind, " ".join(_NUMBER.sub("N", text).split())[:300]


def groups(columns: list[dict], column_name) -> list[dict]:
    """The failures of every column as groups of identical ones, largest first: ``{column, name, status, kind,
    signature, dtype, op, cases}`` (``cases`` worst err/allowed first)."""
    found: dict[tuple, dict] = {}
    for i, report in enumerate(columns):
        for case in report.get("cases", []):
            if case["status"] not in LISTED:
                continue
            kind, signature = cause(case)
            op = str(case.get("package") or "").split("@", 1)[0]
            key = (i, case["status"], op, kind, case.get("dtype"), signature)
            found.setdefault(
                key,
                {
                    "column": i,
                    "name": column_name(report, i),
                    "status": case["status"],
                    "kind": kind,
                    "signature": signature,
                    "dtype": case.get("dtype"),
                    "op": op,
                    "cases": [],
                },
            )["cases"].append(case)
    for group in found.values():
        group["cases"].sort(key=lambda c: (-_ratio(c), c["id"]))
    return sorted(found.values(), key=lambda g: (g["column"], -len(g["cases"]), g["op"], g["kind"], g["signature"]))


def _ratio(case: dict) -> float:
    value = case.get("worst_ratio")
    return float(value) if isinstance(value, (int, float)) and not math.isnan(value) else -1.0


def section(columns: list[dict], column_name) -> list[str]:
    """The page's failures section: a heading, then one block per group."""
    found = groups(columns, column_name)
    if not found:
        return ["<h2>Failures</h2><p>none</p>"]
    total = sum(len(g["cases"]) for g in found)
    out = [
        f"<h2>Failures ({total} case(s) in {len(found)} group(s) of identical failures)</h2>",
        "<p>A group: the same column, op, kind, dtype and message (numbers as N). Its worst case is shown in "
        "full; each case's rerun command is listed.</p>",
    ]
    return out + [_group(g, len(columns)) for g in found]


def _group(group: dict, n_columns: int) -> str:
    where = f" in ({group['column'] + 1}) {escape(group['name'])}" if n_columns > 1 else ""
    cases, worst = group["cases"], group["cases"][0]
    head = (
        f'<div class="failure"><h3>{len(cases)} case(s) {escape(group["status"])}{where}: '
        f"{escape(group['kind'])}, {escape(str(group['dtype']))}: <code>{escape(group['signature'])}</code></h3>"
    )
    rows = "".join(_member_row(c, group["column"]) for c in cases)
    table = f"<table><tr><th>case</th><th>worst err / allowed</th><th>rerun</th></tr>{rows}</table>"
    body = [head, table, f"<p>worst case, <code>{escape(worst['id'])}</code>:</p>", *_details(worst)]
    if len(cases) > 1:
        folded = "".join(
            f"<details><summary><code>{escape(c['id'])}</code></summary>{''.join(_details(c))}</details>"
            for c in cases[1:]
        )
        body.append(f"<p>the other {len(cases) - 1} case(s):</p>{folded}")
    return "".join(body) + "</div>"


def _member_row(case: dict, column: int) -> str:
    ratio = _ratio(case)
    rerun = f"<code>{escape(case['rerun'])}</code>" if case.get("rerun") else ""
    return (
        f'<tr id="{escape(anchor(case["id"], column))}"><td><code>{escape(case["id"])}</code></td>'
        f"<td>{f'{ratio:.3g}' if ratio >= 0 else ''}</td><td>{rerun}</td></tr>"
    )


def _details(case: dict) -> list[str]:
    """A failure's message, plots and repro."""
    body = []
    if case.get("divergence"):
        body.append(f"<p>divergence: {escape(case['divergence'])}</p>")
    body.append(f"<pre>{escape(case.get('detail') or '')}</pre>")
    profile = case.get("error_profile")
    if profile and profile.get("profile"):
        body.append(
            f"<p>output {escape(str(profile.get('role')))} of shape {escape(str(profile.get('shape')))}"
            f"{_share_text(profile)}:</p>" + profile_svg(profile["profile"], profile.get("failing"), _per_bar(profile))
        )
        if profile.get("by_input"):
            body.append(input_svg(profile["by_input"]))
    if case.get("repro"):
        body.append(f"<p>standalone repro: <code>{escape(case['repro'])}</code></p>")
    return body


def _share_text(profile: dict) -> str:
    checked, bad = profile.get("checked"), profile.get("mismatches")
    if not checked or bad is None:
        return ""
    return f", {bad} of {checked} checked elements out of tolerance ({100 * bad / checked:.3g}%)"


def _per_bar(profile: dict) -> float | None:
    shape = profile.get("shape")
    if not isinstance(shape, list) or not profile.get("profile"):
        return None
    return math.prod(int(d) for d in shape) / len(profile["profile"])


def _bars(values: list, shares: list | None, label, width: int, height: int, aria: str) -> tuple[list[str], float]:
    """Bars of err/allowed (log scale, 1e-3 up; None: non-finite, dark; negative: blank), the allowed level
    dashed, and under them a strip whose red is the share of each bar's elements out of tolerance."""
    top = max([10.0] + [v for v in values if v is not None and v > 0])
    span = math.log10(top) + 3

    def y(value: float) -> float:
        return height - height * (math.log10(max(value, 1e-3)) + 3) / span

    bar = width / max(1, len(values))
    strip = STRIP if shares else 0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + strip}" role="img" '
        f'aria-label="{escape(aria)}">',
        f'<rect width="{width}" height="{height}" fill="#fafafa" stroke="#ccc"/>',
    ]
    for i, value in enumerate(values):
        x, w = i * bar, max(bar - 0.5, 0.5)
        share = shares[i] if shares and i < len(shares) else None
        tail = f", {100 * share:.3g}% of its elements out of tolerance" if share is not None else ""
        if value is None:
            parts.append(
                f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{height}" fill="#7f0000">'
                f"<title>{escape(label(i))}: non-finite{tail}</title></rect>"
            )
        elif value >= 0:
            top_y = y(value)
            parts.append(
                f'<rect x="{x:.1f}" y="{top_y:.1f}" width="{w:.1f}" height="{height - top_y:.1f}" '
                f'fill="{"#d73027" if value > 1 else "#4575b4"}"><title>{escape(label(i))}: largest '
                f"{value:.3g} x allowed{tail}</title></rect>"
            )
        if share:
            parts.append(
                f'<rect x="{x:.1f}" y="{height}" width="{w:.1f}" height="{strip}" fill="#d73027" '
                f'fill-opacity="{max(share, 0.05):.3f}"/>'
            )
    parts.append(
        f'<line x1="0" x2="{width}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" stroke="#000" stroke-dasharray="4 3"/>'
    )
    return parts + ["</svg>"], top


def profile_svg(
    profile: list, failing: list | None = None, per_bar: float | None = None, width: int = 480, height: int = 90
) -> str:
    """err/allowed over the output in element order, one bar per run of consecutive elements: an inline SVG."""
    parts, top = _bars(
        profile,
        failing or None,
        lambda i: f"element run {i}",
        width,
        height,
        "error divided by allowed over the output",
    )
    runs = (
        f"each bar: the largest of its ~{per_bar:.3g} consecutive elements"
        if per_bar
        else "each bar: the largest of its run of elements"
    )
    strip = "; the strip under the bars: the share of a bar's elements out of tolerance (red: all)" if failing else ""
    caption = (
        f"<br><small>err / allowed over the output in element order ({runs}{strip}), log scale from 0.001 "
        f"(dashed line: allowed; largest {top:.3g}; dark: non-finite; blank: unconstrained)</small>"
    )
    return "".join(parts) + caption


def input_svg(by_input: dict, width: int = 480, height: int = 90) -> str:
    """err/allowed against the input value, one bar per equal bin of the inputs' range: an inline SVG."""
    lo, hi = by_input["range"]
    n = len(by_input["worst"])
    step = (hi - lo) / n
    counts = by_input.get("count") or [0] * n
    parts, top = _bars(
        by_input["worst"],
        by_input.get("failing"),
        lambda i: f"input in [{lo + i * step:.4g}, {lo + (i + 1) * step:.4g}), {counts[i]} element(s)",
        width,
        height,
        "error divided by allowed against the input value",
    )
    zero = f"; x = 0 at {100 * (0 - lo) / (hi - lo):.0f}% of the width" if lo < 0 < hi else ""
    caption = (
        f"<br><small>err / allowed against the input value, from {lo:.4g} (left) to {hi:.4g} (right){zero}: "
        f"each bar the largest over the elements whose input lies in its 1/{n} of that range; the strip: "
        f"their share out of tolerance; blank: no element there</small>"
    )
    return f"<p>against the input:</p>{''.join(parts)}{caption}"
