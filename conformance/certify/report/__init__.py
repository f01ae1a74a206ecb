"""The conformance report: JSON for machines, Markdown beside it for people, for any implementation.

This package is everything the suite writes of a verdict, read back or drawn: here, one column's report (its JSON,
its Markdown, the writer of every report file); ``check`` (a report read back, field by field, before ``merge``
trusts it), ``matrix`` (the columns side by side, and a run of several columns' Markdown), ``html`` and ``failures``
(the self-contained page and its grouped failures), ``quote`` (text from a package or a page made safe to show),
``templates`` (template branch coverage). They sit under ``certify/`` beside the verdict they report, and import
nothing of the implementations under test.

``not-applicable`` is a case status (nothing the case asserts applies to the implementation, e.g. a rejection
that only a smaller device profile makes); ``checks`` counts each assertion (contract, variant, dispatch,
outputs, values) as passed / failed / not-applicable over the cases of an implementation outside the device
model; ``divergences`` lists the cases where it departs from the manifest's contract.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from conformance.certify.evidence import WEAK_NOTE, WEAK_TITLE, assess, cell_line, flag_lines
from conformance.certify.outcomes import CHECK_STATUSES, NOT_APPLICABLE, STATUSES
from conformance.certify.report import html as report_html
from conformance.certify.report.quote import cell, code_block, code_span
from conformance.files import check_output, write_output

#: The statuses a report's Markdown lists under "## Failures".
FAILURES = ("failed", "xpassed", "not-run")
DIVERGENCE_TEXT = {
    "rejects-accepted": "rejects calls the manifest accepts",
    "accepts-rejected": "accepts calls the manifest rejects",
}


def summarize(verdicts: Iterable[dict]) -> dict:
    """Per package, variant and dtype: counts by status and the worst error as a fraction of the allowed."""
    table: dict = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: {**{s: 0 for s in STATUSES}, "worst_ratio": None}))
    )
    for v in verdicts:
        cell = table[v["package"]][v["variant"]][v["dtype"]]
        cell[v["status"]] += 1
        ratio = v.get("worst_ratio")
        if ratio is not None and (cell["worst_ratio"] is None or ratio > cell["worst_ratio"]):
            cell["worst_ratio"] = ratio
    return {pkg: {var: dict(dts) for var, dts in sorted(vars_.items())} for pkg, vars_ in sorted(table.items())}


def check_totals(verdicts) -> dict:
    out: dict = {}
    for v in verdicts:
        for check, status in (v.get("checks") or {}).items():
            out.setdefault(check, {s: 0 for s in CHECK_STATUSES})
            out[check][status] = out[check].get(status, 0) + 1
    return out


def divergences(verdicts) -> dict:
    out = defaultdict(list)
    for v in sorted(verdicts, key=lambda v: v["id"]):
        if v.get("divergence"):
            out[v["divergence"]].append(
                {"id": v["id"], "status": v["status"], "detail": (v.get("detail") or "").strip()}
            )
    return dict(out)


def replanned(verdicts) -> dict[str, int]:
    """How cases were planned for a device that lacks what their profile assumes: change -> count."""
    return dict(Counter(_change_kind(v["replanned"]) for v in verdicts if v.get("replanned")).most_common())


def _change_kind(text: str) -> str:
    """A change without its variant names, so that counts group ("f16 call rejected: device lacks ...")."""
    return (
        text.split(", was ")[0].split(": device lacks")[0] + ": " + text.rsplit(": ", 1)[-1]
        if ": device lacks" in text
        else text
    )


#: The certification states, most honest first: a waived failure is never reported as a plain pass, and a run
#: that checked nothing is never reported as one that passed.
RESULTS = {
    "conforms": "conforms",
    "conforms-with-waivers": "conforms with waivers",
    "does-not-conform": "does not conform",
    "nothing-checked": "nothing checked",
}


def waivers(verdicts) -> list[dict]:
    """The failures an ``--expectations`` entry (or ``--divergences=xfail``) waived: case, pattern, reason and
    the failure itself."""
    return [
        {
            "id": v["id"],
            "pattern": (v.get("waiver") or {}).get("pattern"),
            "reason": (v.get("waiver") or {}).get("reason"),
            "waived": (v.get("detail") or "").strip(),
        }
        for v in sorted(verdicts, key=lambda v: v["id"])
        if v["status"] == "xfailed"
    ]


def result_of(totals: dict, evidence: dict) -> str:
    """The result: any failure, or a package, variant or dtype left unchecked, is not conformance; a column in
    which no cell was checked (every case skipped, not applicable, deselected or planned into a rejection, or no
    case at all) is ``nothing-checked``, whatever else it says."""
    if totals["failed"] or totals["xpassed"] or totals["not-run"]:
        return "does-not-conform"
    if not evidence["checked"]:
        return "nothing-checked"
    if evidence["unchecked"]:
        return "does-not-conform"
    return "conforms-with-waivers" if totals["xfailed"] else "conforms"


#: The results a run's exit status treats as a pass.
PASSING = ("conforms", "conforms-with-waivers")


def build(
    verdicts: list[dict],
    *,
    identity: list[dict],
    device: dict | None,
    implementation: str,
    skipped_reasons: dict[str, int],
    deselected_heavy: int,
    interrupted: bool = False,
    weak: list[dict] = (),
    templates: list[dict] = (),
    left_out: list[dict] = (),
) -> dict:
    """The report of one column; ``weak``: the case generator's weakness flags of the packages under test
    (``{package, kind, message}``, cases.weakness.of_package); ``templates``: their template branch coverage
    (conformance.certify.report.templates); ``left_out``: the heavy cases selected but not run
    (:func:`conformance.certify.evidence.left_out_entry`), so that a variant only they reach is named."""
    totals = {s: sum(1 for v in verdicts if v["status"] == s) for s in STATUSES}
    evidence = assess(verdicts, left_out)
    result = "does-not-conform" if interrupted else result_of(totals, evidence)
    return {
        "implementation": implementation,
        "interrupted": interrupted,  # a partial report: the run was stopped (Ctrl-C) before every case ran
        "packages": identity,
        "device": device,
        "totals": totals,
        "result": result,
        #: True for "conforms" and "conforms-with-waivers" (the run's exit status); "result" tells them apart.
        "conforms": result in PASSING,
        #: Packages, variants and dtypes without a value-checked case: named, and never "conforms".
        "unchecked": evidence["unchecked"],
        #: Variants and dtypes the device cannot run (every case planned into a rejection, skipped...).
        "not_runnable": evidence["not_runnable"],
        #: Weaker than it looks: the generator's flags per package (each naming what to add), and the cases that
        #: passed having compared no element (every reference element unconstrained for their data).
        "weak": list(weak),
        "compared_nothing": evidence["compared_nothing"],
        #: Per template: its branches (line, kind, condition) and how many golden cases render each.
        "template_coverage": list(templates),
        "waivers": waivers(verdicts),
        "skipped_reasons": skipped_reasons,
        "not_applicable_reasons": dict(Counter(v["detail"] for v in verdicts if v["status"] == NOT_APPLICABLE)),
        "deselected_heavy": deselected_heavy,
        #: The heavy cases selected but not run: the cells they name are judged too (evidence.assess).
        "left_out": sorted(left_out, key=lambda v: v["id"]),
        "replanned": replanned(verdicts),
        "summary": summarize(verdicts),
        "checks": check_totals(verdicts),
        "divergences": divergences(verdicts),
        "cases": sorted(verdicts, key=lambda v: v["id"]),
    }


def device_line(dev: dict | None) -> str:
    """What the cases ran on, from the fields the implementation reported (none shown as '?' or empty)."""
    if not dev:
        return "none reported (no case ran)"
    if not dev.get("adapter"):  # an implementation outside the device model: it runs where it runs
        name = dev.get("implementation") or "the implementation"
        provider = f" (provider {dev['provider']})" if dev.get("provider") else ""
        unavailable = f"; unavailable here: {dev['available']}" if dev.get("available") else ""
        return f"not reported: {name}{provider} runs outside the suite's device model{unavailable}"
    details = [str(dev[k]) for k in ("type", "backend") if dev.get(k) not in (None, "", "?")]
    if dev.get("driver"):
        details.append(f"driver {dev['driver']}")
    through = f" through {dev['webgpu']}" if dev.get("webgpu") else ""
    fallback = f"; {dev['fallback']}" if dev.get("fallback") else ""
    return (f"{dev['adapter']} ({', '.join(details)})" if details else str(dev["adapter"])) + through + fallback


def markdown(report: dict) -> str:
    lines = [
        f"# Conformance report: {cell(report['implementation'])}",
        "",
        f"Device: {cell(device_line(report.get('device')))}",
        "",
        f"Result: **{RESULTS[report['result']]}**"
        + (f" ({len(report['waivers'])} waived failure(s), listed under Waivers)" if report["waivers"] else "")
        + (" (interrupted: a partial report)" if report.get("interrupted") else "")
        + "  ",
        "Totals: " + (", ".join(f"{k} {v}" for k, v in report["totals"].items() if v) or "no case ran"),
        "",
    ]
    if report.get("error"):
        lines += [f"**Error:** {cell(str(report['error']))}", ""]
    if report["deselected_heavy"]:
        lines.append(f"Heavy cases not run: {report['deselected_heavy']} (run them with `--run-heavy`).")
    for reason, count in report["skipped_reasons"].items():
        lines.append(f"Skipped {count}: {cell(reason)}  ")
    if report.get("replanned"):
        lines += ["", "Planned for this device (it lacks what a case's profile assumes):", ""]
        lines += [f"- {n} case(s): {cell(change)}" for change, n in report["replanned"].items()]
    lines += ["", "## Packages", ""]
    for pkg in report["packages"]:
        files = ", ".join(
            f"{code_span(name)} sha256 {code_span((digest or 'missing')[:16])}" for name, digest in pkg["files"].items()
        )
        lines.append(f"- **{cell(pkg['package'])}** ({cell(pkg['root'])}): {files}")
    lines += [
        "",
        "## Results",
        "",
        "| package | variant | dtype | passed | failed | skipped | xfailed | not applicable | worst error / allowed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pkg, variants in report["summary"].items():
        for variant, dtypes in variants.items():
            for dtype, c in dtypes.items():
                ratio = "" if c["worst_ratio"] is None else f"{c['worst_ratio']:.3g}"
                lines.append(
                    f"| {cell(pkg)} | {cell(variant)} | {cell(dtype)} | {c['passed']} | {c['failed']} | "
                    f"{c['skipped']} | {c['xfailed']} | {c[NOT_APPLICABLE]} | {ratio} |"
                )
    lines += _evidence_lines(report) + _weak_lines(report)
    lines += ["", "## Failures", *failure_lines(report)] if failing(report) else _waiver_lines(report)
    return "\n".join(lines) + "\n" + outside_sections(report)


def failing(report: dict) -> bool:
    """Whether the report has a case to list under ``## Failures``."""
    return any(v["status"] in FAILURES for v in report["cases"])


def failure_lines(report: dict) -> list[str]:
    """The lines of a report's Markdown under its ``## Failures`` heading: each failure with its whole message (a
    value failure's table of worst elements is the evidence), then the waivers. A run of several columns puts
    them under each failing column's own heading (:func:`conformance.certify.report.matrix.run_markdown`)."""
    lines = [""]
    for v in report["cases"]:
        if v["status"] not in FAILURES:
            continue
        lines += [f"- {code_span(v['id'])} ({v['status']})", ""] + code_block(v.get("detail") or "") + [""]
        if v.get("repro"):
            lines += [f"  standalone repro: {code_span(v['repro'])}", ""]
    return lines + _waiver_lines(report)


def _waiver_lines(report: dict) -> list[str]:
    """The failures a waiver turned into xfailed, each with its pattern, reason and the failure as it was."""
    if not report["waivers"]:
        return []
    lines = [
        "",
        "## Waivers",
        "",
        "Failures that `--expectations` (or `--divergences=xfail`) waived: the case failed as shown.",
        "",
    ]
    for w in report["waivers"]:
        lines += (
            [f"- {code_span(w['id'])}: waived by {code_span(w['pattern'] or '')} ({cell(w['reason'])})", ""]
            + code_block(w["waived"])
            + [""]
        )
    return lines


def _evidence_lines(report: dict) -> list[str]:
    """What the result could not rest on: cells left unchecked (never "conforms"), and those the device cannot run."""
    lines = []
    for key, title, note in (
        (
            "unchecked",
            "Not checked",
            "no case of these was dispatched and value-checked, so the result cannot be *conforms*",
        ),
        (
            "not_runnable",
            "Not runnable on this device",
            "every case was planned into a rejection for this device, skipped or not applicable",
        ),
    ):
        entries = report.get(key) or []
        if entries:
            lines += ["", f"## {title}", "", f"{note.capitalize()}.", ""]
            lines += [f"- {cell(cell_line(e))}" for e in entries]
    return lines


def _weak_lines(report: dict) -> list[str]:
    """The generator's weakness flags and the cases that compared no element: they pass, but check less than
    they seem to."""
    found = flag_lines(report.get("weak") or [], report.get("compared_nothing") or [])
    if not found:
        return []
    return [
        "",
        f"## {WEAK_TITLE}",
        "",
        f"{WEAK_NOTE} (`python -m cases --coverage` shows the generator's flags too).",
        "",
    ] + [f"- {cell(line)}" for line in found]


def outside_sections(data: dict) -> str:
    """Not-applicable reasons, per-assertion counts and divergences (implementations outside the device model)."""
    lines = []
    if data.get("totals", {}).get(NOT_APPLICABLE):
        lines += ["", "## Not applicable", ""]
        lines += [
            f"- {n}: {cell(reason)}"
            for reason, n in sorted(data["not_applicable_reasons"].items(), key=lambda kv: -kv[1])
        ]
    if data.get("checks"):
        lines += [
            "",
            "## Assertions",
            "",
            "| assertion | passed | failed | not applicable |",
            "| --- | --- | --- | --- |",
        ]
        for check, counts in data["checks"].items():
            lines.append(
                f"| {check} | {counts.get('passed', 0)} | {counts.get('failed', 0)} | {counts.get(NOT_APPLICABLE, 0)} |"
            )
    if data.get("divergences"):
        lines += ["", "## Divergences from the manifest's contract", ""]
        for kind, cases in data["divergences"].items():
            lines += [f"### {cell(data['implementation'])} {cell(DIVERGENCE_TEXT.get(kind, kind))} ({len(cases)})", ""]
            for c in cases:
                body = c["detail"].split(": ", 1)[-1] if c["detail"] else ""
                lines.append(f"- {code_span(c['id'])}: {cell(' '.join(body.split())[:300])}")
            lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")


def strict_json(data) -> str:
    """``data`` as JSON every parser takes: a non-finite number (a NaN output's ratio) becomes null, never the
    ``NaN`` / ``Infinity`` that Python writes and JSON does not have."""
    return json.dumps(_finite(data), indent=2, sort_keys=False, allow_nan=False)


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write_files(path: Path, data: dict, markdown_text: str, html_text: str | None = None) -> tuple[Path, ...]:
    """``path`` as JSON, ``path.with_suffix('.md')`` as Markdown and, when given, ``.html`` as a page: the one
    writer of every report."""
    path, md, page = check_paths(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_output(path, strict_json(data) + "\n")
    write_output(md, markdown_text)
    if html_text is None:
        return path, md
    write_output(page, html_text)
    return path, md, page


def check_paths(path: Path) -> tuple[Path, Path, Path]:
    """The JSON, Markdown and HTML paths of a report at ``path``, refused (ConformanceError) unless each can be
    written as a regular file: call before running anything."""
    path = Path(path)
    return check_output(path), check_output(path.with_suffix(".md")), check_output(path.with_suffix(".html"))


def write(report: dict, path: Path) -> tuple[Path, Path, Path]:
    return write_files(
        path,
        report,
        markdown(report),
        report_html.page([report], title=f"Conformance report: {report['implementation']}"),
    )
