#!/usr/bin/env python3
"""Write an ``--expectations`` file from a conformance report: one strict-xfail entry per failed case, its reason
the first line of the failure (what the implementation did), so that a CI step passes while those findings stay
as they are and fails on any new one (or on a finding that went away: strict).

    python3 scripts/expectations_from_report.py REPORT.json OUT.yaml --title "what ran, where"
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml


def entries(report: dict) -> list[dict]:
    found = []
    for case in report.get("cases", []):
        if case.get("status") not in ("failed", "xfailed"):
            continue
        detail = str(case.get("detail", ""))
        lines = [line.strip() for line in detail.split("\n") if line.strip()]
        head = lines[0].removeprefix(f"{case['id']}:").strip() if lines else ""
        kind = case.get("divergence") or (
            "values" if (case.get("checks") or {}).get("values") == "failed" else "failure"
        )
        if kind == "values":  # how far off, rather than "output Y differs from the reference:"
            head = next((line for line in lines if line.startswith("FAILED:")), head)
        console = (case.get("impl") or {}).get("console")
        if console:
            head += f"; the page's console: {console[0][:120]}"
        found.append({"id": case["id"], "reason": f"{kind}: {head}"[:300]})
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a --conformance-report JSON file")
    parser.add_argument("out", type=Path, help="the expectations YAML to write")
    parser.add_argument("--title", default="", help="a comment line saying what ran where")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"{args.report}: not a readable conformance report ({err})", file=sys.stderr)
        return 2
    found = entries(report)
    head = [
        f"# {args.title}" if args.title else None,
        f"# {len(found)} known failures from {args.report.name} (scripts/expectations_from_report.py); each is",
        "# a strict xfail: a new failure, or one of these passing, fails the run.",
    ]
    text = (
        "\n".join(h for h in head if h) + "\n" + yaml.safe_dump(found, sort_keys=False, width=200, allow_unicode=True)
    )
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {len(found)} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
