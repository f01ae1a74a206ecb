"""``cases`` (also ``python -m cases``): write or check the golden case files, report coverage.

``[--check] [--coverage] [--specs DIR] [--out DIR] [--jobs N]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.cli import batch_collections
from conformance.cli.lazy import on_use
from conformance.config import REPO_SPECS
from conformance.errors import ConformanceError
from conformance.files import check_output, write_output

cases = on_use("cases")
golden = on_use("cases.golden")
missing_record_note = on_use("conformance.ops", "missing_record_note")
kernel_packages = on_use("conformance.engine.package")
branches = on_use("conformance.shader.branches")
weakness = on_use("cases.weakness")
workers = on_use("cases.workers")


def add_arguments(ap) -> None:
    ap.add_argument("--specs", type=Path, default=REPO_SPECS, help="package directory (default: the repo's specs/)")
    ap.add_argument("--out", type=Path, default=None, help="where golden files live (default: cases/)")
    ap.add_argument("--check", action="store_true", help="exit 1 with a diff when a golden file is out of date")
    ap.add_argument("--coverage", action="store_true", help="print the coverage report per manifest")
    ap.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        help="packages generated at a time, each in a worker process (default: CONFORMANCE_JOBS, else "
        "the cores this process may use)",
    )
    ap.add_argument(
        "--without-record",
        action="store_true",
        help="write the golden files of packages that have no op record in this Python (by default "
        "refused: they would lack the cases the record adds)",
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cases", description="write or check the golden case files")
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        return run(args)
    except ConformanceError as err:  # e.g. an installed record that may not be used: one line, as -m conformance
        print(f"error: {err}", file=sys.stderr)
        return 2


def register(sub) -> None:
    p = sub.add_parser("cases", help="write or check the golden case files (as python -m cases), report coverage")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    with batch_collections():
        return _run(args)


def _run(args) -> int:
    args.out = golden.CASES_DIR if args.out is None else args.out
    dirs = kernel_packages.find_package_dirs(args.specs)
    if not dirs:
        print(f"no kernel packages under {args.specs}", file=sys.stderr)
        return 2
    packages, failed = load_all(dirs)
    for package in packages:
        note = missing_record_note(package.name)
        if note:
            print(f"warning: {note}", file=sys.stderr)
    if not args.check and not args.coverage:  # every golden file's path is checked before any is generated
        refused = refuse_without_record(args, packages)
        if refused:
            return 2
        try:
            for package in packages:
                check_output(cases.golden_path(args.out, package.name))
        except ConformanceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.coverage:
        return coverage_all(packages, failed)
    stale, checked = 0, []  # checked: (package, path, calls delta, text diff), summarized before the diffs
    generated = workers.generate_all(packages, args.jobs)
    for package, cases_or_error in zip(packages, generated):
        try:
            stale += one_package(args, package, checked, cases_or_error)
        except Exception as exc:  # noqa: BLE001 -- this package's failure, located; the others still run
            print(f"error: {package.root}: {exc if isinstance(exc, ConformanceError) else repr(exc)}", file=sys.stderr)
            failed += 1
    if checked:
        stale += report_check(checked, golden.regenerate_command(args.specs, args.out))
    return 2 if failed else 1 if stale else 0


def load_all(dirs) -> tuple[list, int]:
    """The packages that load (one op id each), and how many did not (each reported with its file)."""
    packages, failed = [], 0
    for directory in dirs:
        try:
            packages.append(kernel_packages.load_package(directory))
        except ConformanceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
        except Exception as exc:  # noqa: BLE001 -- this package's failure, located; the others still run
            print(f"error: {directory}: cannot load the package: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed += 1
    for name, roots in kernel_packages.duplicate_names(packages).items():
        print(f"error: {len(roots)} packages have the op id {name!r}: {', '.join(map(str, roots))}", file=sys.stderr)
        failed += len(roots)
        packages = [p for p in packages if p.name != name]
    return packages, failed


def coverage_all(packages, failed: int) -> int:
    """Print each package's coverage: variants, conditions, families, then its templates' branches (by rendering,
    pooled over the packages given that share a template) and its weaknesses. 1 when any is incomplete or has
    a dead template branch, 2 when a package failed."""
    reports, incomplete = [], 0
    for package in packages:
        try:
            report = cases.coverage(package)
            reports.append((package, report, branches.template_coverage(package, report.cases)))
        except Exception as exc:  # noqa: BLE001 -- this package's failure, located; the others still run
            print(f"error: {package.root}: {exc if isinstance(exc, ConformanceError) else repr(exc)}", file=sys.stderr)
            failed += 1
    pooled = iter(branches.pooled([t for _, _, templates in reports for t in templates]))
    for _package, report, templates in reports:
        mine = [next(pooled) for _ in templates]
        report.weak += weakness.dead_branches(mine)
        print(report.report())
        print("  templates (branches rendered by the golden cases, pooled over packages sharing a template):")
        print("\n".join(t.report() for t in mine) or "    none")
        incomplete += int(not report.complete or any(t.dead for t in mine))
    return 2 if failed else int(bool(incomplete))


def one_package(args, package, checked: list, generated) -> int:
    """Write, or collect in ``checked`` for the check, one package's golden file from its ``generated`` cases (or
    the error generating them raised); 1 when its planning fails."""
    if isinstance(generated, BaseException):
        raise generated
    text = cases.to_yaml(generated)
    failing = report_planning_failures(package, generated)
    path = cases.golden_path(args.out, package.name)
    if args.check:
        why = golden.stale_why(golden.digest_path(args.out, package.name), package)
        record_changed = bool(why) and "op record" in why
        if why:
            print(
                f"{'error: ' if record_changed else ''}{path}: {why} ({stale_hint(args, package, record_changed)})"
                f": test runs do not load it",
                file=sys.stderr if record_changed else sys.stdout,
            )
        checked.append((package.name, path, golden.compare(path, generated, text), golden.diff(path, text), why))
        return int(failing or record_changed)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_output(path, text)
    write_output(golden.digest_path(args.out, package.name), golden.digest_text(package))
    print(f"{path}: {text.count(chr(10) + '- id: ')} cases")
    return failing


def stale_hint(args, package, record_changed: bool) -> str:
    """What to run about a golden file that does not match: install the record when it is the record this Python
    lacks (rewriting would write the files without it), else regenerate."""
    if record_changed and missing_record_note(package.name):
        return golden.record_missing_hint(package.name)
    return f"run `{golden.regenerate_command(args.specs, args.out)}`"


def refuse_without_record(args, packages) -> int:
    """How many packages have no op record here (each said, with what to install) when golden files are to be
    written without ``--without-record``: such files lack the record's cases and fail a check that has it."""
    if args.without_record:
        return 0
    missing = [p for p in packages if missing_record_note(p.name)]
    for package in missing:
        print(
            f"error: {package.root}: not writing its golden file: "
            f"{golden.record_missing_hint(package.name)} "
            f"(a package that has no record yet: --without-record)",
            file=sys.stderr,
        )
    return len(missing)


def report_planning_failures(package, generated) -> int:
    """Say each expression that fails to evaluate for generated calls (the golden file records those calls as
    ``planning-failed``, which pytest fails); 1 when there is any, so the command does not pass silently."""
    failures = cases.planning_failures(generated)
    for f in failures:
        print(
            f"error: {package.manifest.file}:{f.pointer}: fails to evaluate for {f.count} generated call(s), "
            f"e.g. case {f.first}: {f.message}",
            file=sys.stderr,
        )
    return int(bool(failures))


def report_check(checked: list, command: str) -> int:
    """Print the summary per package (calls added, removed, changed), then each out-of-date file's diff.

    A file that differs only in how it is written (the order of a mapping's keys: a rejection's per-variant
    details follow the variants' priorities) holds the same calls and outcomes: not a behaviour change, as
    ``diff --gate`` judges it too, so it does not fail the check. Returns the number of out-of-date files."""
    stale = 0
    print("golden case files against the manifests:")
    for name, _path, delta, text, why in checked:
        if delta.differs:
            stale += 1
            print(f"  {name}: {delta.summary()}: out of date")
        elif text:
            print(f"  {name}: same calls and outcomes, written differently (not a behaviour change)")
        elif why:
            print(f"  {name}: same calls and outcomes; its digest file does not match ({why}): `{command}` rewrites it")
        else:
            print(f"  {name}: up to date")
    if stale:
        print(f"run `{command}`, review the diff and commit it")
    for _name, path, delta, text, _ in checked:
        if delta.differs:
            print(f"\n{path}: out of date ({delta.summary()})")
            for label, ids in (("added", delta.added), ("removed", delta.removed), ("changed", delta.changed)):
                print("".join(f"  {label}: {i}\n" for i in ids[:20]), end="")
                if len(ids) > 20:
                    print(f"  ... and {len(ids) - 20} more {label}")
            print(text)
        elif text:
            print(f"{path}: same calls and outcomes; `{command}` rewrites it as generated")
    return stale
