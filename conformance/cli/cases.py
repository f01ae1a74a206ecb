"""``cases`` (also ``python -m cases``): write or check the golden case files, report coverage.

``[--check] [--coverage] [--specs DIR] [--out DIR]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cases import coverage, generate, golden_path, to_yaml
from cases.golden import CASES_DIR, compare, diff, regenerate_command
from conformance.engine.package import REPO_SPECS, find_package_dirs, load_package
from conformance.errors import ConformanceError


def add_arguments(ap) -> None:
    ap.add_argument("--specs", type=Path, default=REPO_SPECS, help="package directory (default: the repo's specs/)")
    ap.add_argument("--out", type=Path, default=CASES_DIR, help="where golden files live (default: cases/)")
    ap.add_argument("--check", action="store_true", help="exit 1 with a diff when a golden file is out of date")
    ap.add_argument("--coverage", action="store_true", help="print the coverage report per manifest")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cases", description="write or check the golden case files")
    add_arguments(ap)
    return run(ap.parse_args(argv))


def register(sub) -> None:
    p = sub.add_parser("cases", help="write or check the golden case files (as python -m cases), report coverage")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    dirs = find_package_dirs(args.specs)
    if not dirs:
        print(f"no kernel packages under {args.specs}", file=sys.stderr)
        return 2
    stale = 0
    checked = []   # (package, path, delta, text diff) for --check: the summary first, then the diffs
    for directory in dirs:
        try:
            package = load_package(directory)
        except ConformanceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if args.coverage:
            report = coverage(package)
            print(report.report())
            stale += not report.complete
            continue
        start = time.perf_counter()
        generated = generate(package)
        text = to_yaml(generated)
        elapsed = time.perf_counter() - start
        path = golden_path(args.out, package.name)
        if args.check:
            checked.append((package.name, path, compare(path, generated), diff(path, text)))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {text.count(chr(10) + '- id: ')} cases ({elapsed:.2f}s)")
    if checked:
        stale += report_check(checked, regenerate_command(args.specs, args.out))
    return 1 if stale else 0


def report_check(checked: list, command: str) -> int:
    """Print the summary per package (calls added, removed, changed), then each out-of-date file's diff.

    A file that differs only in how it is written (the order of a mapping's keys: a rejection's per-variant
    details follow the variants' priorities) holds the same calls and outcomes: not a behaviour change, as
    ``diff --gate`` judges it too, so it does not fail the check. Returns the number of out-of-date files."""
    stale = 0
    print("golden case files against the manifests:")
    for name, path, delta, text in checked:
        if delta.differs:
            stale += 1
            print(f"  {name}: {delta.summary()}: out of date")
        elif text:
            print(f"  {name}: same calls and outcomes, written differently (not a behaviour change)")
        else:
            print(f"  {name}: up to date")
    if stale:
        print(f"run `{command}`, review the diff and commit it")
    for name, path, delta, text in checked:
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
