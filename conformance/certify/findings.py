"""The report for any implementation: ``conformance.report`` plus per-assertion counts and the divergences.

``not-applicable`` is a case status here (nothing the case asserts applies to the implementation, e.g. a
rejection that only a smaller device profile makes); ``checks`` counts each assertion (contract, variant,
dispatch, outputs, values) as passed / failed / not-applicable over the cases of an outside implementation.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from conformance.certify import report

NOT_APPLICABLE = "not-applicable"
CHECK_STATUSES = ("passed", "failed", NOT_APPLICABLE)
DIVERGENCE_TEXT = {"rejects-accepted": "rejects calls the manifest accepts",
                   "accepts-rejected": "accepts calls the manifest rejects"}


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
            out[v["divergence"]].append({"id": v["id"], "status": v["status"],
                                         "detail": (v.get("detail") or "").strip()})
    return dict(out)


def build_report(verdicts: list[dict], **kwargs) -> dict:
    """``report.build`` plus the per-assertion counts and divergences of an outside implementation."""
    data = report.build(verdicts, **kwargs)
    data["totals"].setdefault(NOT_APPLICABLE, 0)
    data["not_applicable_reasons"] = dict(Counter(v["detail"] for v in verdicts if v["status"] == NOT_APPLICABLE))
    data["checks"] = check_totals(verdicts)
    data["divergences"] = divergences(verdicts)
    return data


def markdown_extra(data: dict) -> str:
    lines = []
    if data.get("totals", {}).get(NOT_APPLICABLE):
        lines += ["", "## Not applicable", ""]
        lines += [f"- {n}: {reason}" for reason, n in sorted(data["not_applicable_reasons"].items(),
                                                                key=lambda kv: -kv[1])]
    if data.get("checks"):
        lines += ["", "## Assertions", "", "| assertion | passed | failed | not applicable |", "| --- | --- | --- | --- |"]
        for check, counts in data["checks"].items():
            lines.append(f"| {check} | {counts.get('passed', 0)} | {counts.get('failed', 0)} | "
                         f"{counts.get(NOT_APPLICABLE, 0)} |")
    if data.get("divergences"):
        lines += ["", "## Divergences from the manifest's contract", ""]
        for kind, cases in data["divergences"].items():
            lines += [f"### {data['implementation']} {DIVERGENCE_TEXT.get(kind, kind)} ({len(cases)})", ""]
            for c in cases:
                body = c["detail"].split(": ", 1)[-1] if c["detail"] else ""
                lines.append(f"- `{c['id']}`: {' '.join(body.split())[:300]}")
            lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")


def write_report(data: dict, path: Path):
    json_path, md_path = report.write(data, Path(path))
    extra = markdown_extra(data)
    if extra:
        md_path.write_text(md_path.read_text() + extra)
    return json_path, md_path
