"""``merge REPORT... --out matrix.md``: reports of several machines as one matrix (``--json`` for machines)."""

from __future__ import annotations

from pathlib import Path

from conformance.certify.matrix import load, markdown, merge
from conformance.certify.report import strict_json
from conformance.files import check_output, write_output


def _merge(args) -> int:
    reports = [(Path(p), load(Path(p))) for p in args.reports]
    for target in (args.out, args.json):
        if target:
            check_output(Path(target))
    matrix = merge(reports, allow_different_packages=args.allow_different_packages)
    text = markdown(matrix)
    if args.out:
        write_output(Path(args.out), text)
    if args.json:
        write_output(Path(args.json), strict_json(matrix) + "\n")
    if not args.out and not args.json:
        print(text, end="")
    print(f"merged {len(reports)} report(s): {len(matrix['rows'])} rows x {len(matrix['columns'])} columns")
    return 0


def register(sub) -> None:
    p = sub.add_parser("merge", help="combine conformance reports (JSON) of several devices or machines into a matrix")
    p.add_argument("reports", nargs="+", help="JSON reports written by --conformance-report")
    p.add_argument("--out", default=None, help="write the Markdown matrix here (default: print it)")
    p.add_argument("--json", default=None, help="write the matrix as JSON here")
    p.add_argument("--allow-different-packages", action="store_true",
                   help="merge reports whose package files differ (sha256)")
    p.set_defaults(func=_merge)
