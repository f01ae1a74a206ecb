"""``merge REPORT... --out matrix.md``: reports of several machines as one matrix (``--json`` for machines,
``--html`` for a page with the colour grid and every column's failures)."""

from __future__ import annotations

from pathlib import Path

from conformance.cli.lazy import on_use

load = on_use("conformance.certify.report.matrix", "load")
markdown = on_use("conformance.certify.report.matrix", "markdown")
merge = on_use("conformance.certify.report.matrix", "merge")
missing_lines = on_use("conformance.certify.report.matrix", "missing_lines")
flatten = on_use("conformance.certify.report.matrix", "flatten")
report_html = on_use("conformance.certify.report.html")
check_output = on_use("conformance.files", "check_output")
write_output = on_use("conformance.files", "write_output")
strict_json = on_use("conformance.certify.report", "strict_json")
inconsistent_lines = on_use("conformance.certify.report.matrix", "inconsistent_lines")


def _merge(args) -> int:
    reports = [(Path(p), load(Path(p))) for p in args.reports]
    page = check_output(Path(args.html)) if args.html else None
    for target in (args.out, args.json):
        if target:
            check_output(Path(target))
    matrix = merge(reports, allow_different_packages=args.allow_different_packages)
    text = markdown(matrix)
    if page:
        write_output(page, report_html.page([col for _, col in flatten(reports)], matrix, title="Conformance matrix"))
    if args.out:
        write_output(Path(args.out), text)
    if args.json:
        write_output(Path(args.json), strict_json(matrix) + "\n")
    if not args.out and not args.json and not args.html:
        print(text, end="")
    for line in missing_lines(matrix):
        print(f"note: {line}")
    print(f"merged {len(reports)} report(s): {len(matrix['rows'])} rows x {len(matrix['columns'])} columns")
    return _inconsistent_status(reports)


def _inconsistent_status(reports) -> int:
    """1 when a report's header contradicts its cases (each named), else 0."""
    lines = inconsistent_lines(reports)
    for line in lines:
        print(f"error: {line}")
    return 1 if lines else 0


def register(sub) -> None:
    p = sub.add_parser("merge", help="combine conformance reports (JSON) of several devices or machines into a matrix")
    p.add_argument("reports", nargs="+", help="JSON reports written by --conformance-report")
    p.add_argument("--out", default=None, help="write the Markdown matrix here (default: print it)")
    p.add_argument("--json", default=None, help="write the matrix as JSON here")
    p.add_argument(
        "--html",
        default=None,
        help="write the matrix as one self-contained HTML page here (colour grid, "
        "devices, every failure with its plot and rerun command)",
    )
    p.add_argument(
        "--allow-different-packages", action="store_true", help="merge reports whose package files differ (sha256)"
    )
    p.set_defaults(func=_merge)
