"""The conformance report: JSON for machines, Markdown beside it for people."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable

STATUSES = ("passed", "failed", "skipped", "xfailed", "xpassed", "not-run", "not-applicable")


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


def build(verdicts: list[dict], *, identity: list[dict], device: dict | None, implementation: str,
          skipped_reasons: dict[str, int], deselected_heavy: int) -> dict:
    totals = {s: sum(1 for v in verdicts if v["status"] == s) for s in STATUSES}
    return {
        "implementation": implementation,
        "packages": identity,
        "device": device,
        "totals": totals,
        "conforms": totals["failed"] == 0 and totals["xpassed"] == 0 and totals["not-run"] == 0,
        "skipped_reasons": skipped_reasons,
        "deselected_heavy": deselected_heavy,
        "summary": summarize(verdicts),
        "cases": sorted(verdicts, key=lambda v: v["id"]),
    }


def markdown(report: dict) -> str:
    dev = report.get("device") or {}
    lines = [f"# Conformance report: {report['implementation']}", "",
             f"Device: {dev.get('adapter', '?')} ({dev.get('backend', '?')}, {dev.get('driver', '?')})", "",
             "Result: **" + ("conforms" if report["conforms"] else "does not conform") + "**  ",
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
    return "\n".join(lines) + "\n"


def write(report: dict, path: Path) -> tuple[Path, Path]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")
    md = path.with_suffix(".md")
    md.write_text(markdown(report))
    return path, md
