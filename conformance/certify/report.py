"""The conformance report: JSON for machines, Markdown beside it for people, for any implementation.

``not-applicable`` is a case status (nothing the case asserts applies to the implementation, e.g. a rejection
that only a smaller device profile makes); ``checks`` counts each assertion (contract, variant, dispatch,
outputs, values) as passed / failed / not-applicable over the cases of an implementation outside the device
model; ``divergences`` lists the cases where it departs from the manifest's contract.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from conformance.certify.outcomes import CHECK_STATUSES, NOT_APPLICABLE, STATUSES
from conformance.engine.files import check_output, write_output

DIVERGENCE_TEXT = {"rejects-accepted": "rejects calls the manifest accepts",
                   "accepts-rejected": "accepts calls the manifest rejects"}


def summarize(verdicts: Iterable[dict]) -> dict:
    """Per package, variant and dtype: counts by status and the worst error as a fraction of the allowed."""
    table: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(
        lambda: {**{s: 0 for s in STATUSES}, "worst_ratio": None})))
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
            out[v["divergence"]].append({"id": v["id"], "status": v["status"],
                                         "detail": (v.get("detail") or "").strip()})
    return dict(out)


def build(verdicts: list[dict], *, identity: list[dict], device: dict | None, implementation: str,
          skipped_reasons: dict[str, int], deselected_heavy: int, interrupted: bool = False) -> dict:
    totals = {s: sum(1 for v in verdicts if v["status"] == s) for s in STATUSES}
    return {
        "implementation": implementation,
        "interrupted": interrupted,     # a partial report: the run was stopped (Ctrl-C) before every case ran
        "packages": identity,
        "device": device,
        "totals": totals,
        "conforms": not interrupted and totals["failed"] == 0 and totals["xpassed"] == 0 and totals["not-run"] == 0,
        "skipped_reasons": skipped_reasons,
        "not_applicable_reasons": dict(Counter(v["detail"] for v in verdicts if v["status"] == NOT_APPLICABLE)),
        "deselected_heavy": deselected_heavy,
        "summary": summarize(verdicts),
        "checks": check_totals(verdicts),
        "divergences": divergences(verdicts),
        "cases": sorted(verdicts, key=lambda v: v["id"]),
    }


def markdown(report: dict) -> str:
    dev = report.get("device") or {}
    lines = [f"# Conformance report: {report['implementation']}", "",
             f"Device: {dev.get('adapter', '?')} ({dev.get('backend', '?')}, {dev.get('driver', '?')})", "",
             "Result: **" + ("conforms" if report["conforms"] else "does not conform") + "**"
             + (" (interrupted: a partial report)" if report.get("interrupted") else "") + "  ",
             "Totals: " + ", ".join(f"{k} {v}" for k, v in report["totals"].items() if v), ""]
    if report["deselected_heavy"]:
        lines.append(f"Heavy cases not run: {report['deselected_heavy']} (run them with `--run-heavy`).")
    for reason, count in report["skipped_reasons"].items():
        lines.append(f"Skipped {count}: {reason}")
    lines += ["", "## Packages", ""]
    for pkg in report["packages"]:
        files = ", ".join(f"`{name}` sha256 `{(digest or 'missing')[:16]}`" for name, digest in pkg["files"].items())
        lines.append(f"- **{pkg['package']}** ({pkg['root']}): {files}")
    lines += ["", "## Results", "", "| package | variant | dtype | passed | failed | skipped | xfailed | worst error / allowed |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for pkg, variants in report["summary"].items():
        for variant, dtypes in variants.items():
            for dtype, cell in dtypes.items():
                ratio = "" if cell["worst_ratio"] is None else f"{cell['worst_ratio']:.3g}"
                lines.append(f"| {pkg} | {variant} | {dtype} | {cell['passed']} | {cell['failed']} | "
                             f"{cell['skipped']} | {cell['xfailed']} | {ratio} |")
    failed = [v for v in report["cases"] if v["status"] in ("failed", "xpassed", "not-run")]
    if failed:
        lines += ["", "## Failures", ""]
        lines += [f"- `{v['id']}` ({v['status']}): {v['detail'].splitlines()[0] if v['detail'] else ''}"
                  for v in failed]
    return "\n".join(lines) + "\n" + _outside_sections(report)


def _outside_sections(data: dict) -> str:
    """Not-applicable reasons, per-assertion counts and divergences (implementations outside the device model)."""
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


def write_files(path: Path, data: dict, markdown_text: str) -> tuple[Path, Path]:
    """``path`` as JSON and ``path.with_suffix('.md')`` as Markdown: the one writer of every report."""
    path, md = check_paths(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_output(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
    write_output(md, markdown_text)
    return path, md


def check_paths(path: Path) -> tuple[Path, Path]:
    """The JSON and Markdown paths of a report at ``path``, refused (ConformanceError) unless both can be
    written as regular files: call before running anything."""
    path = Path(path)
    return check_output(path), check_output(path.with_suffix(".md"))


def write(report: dict, path: Path) -> tuple[Path, Path]:
    return write_files(path, report, markdown(report))
