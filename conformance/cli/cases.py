"""``cases`` (also ``python -m cases``): write or check the golden case files, report coverage.

``[--check] [--coverage] [--specs DIR] [--out DIR]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cases import coverage, generate, golden_path, to_yaml
from cases.golden import CASES_DIR, diff, digest_path, golden_digest, regenerate_command
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
        text = to_yaml(generate(package))
        elapsed = time.perf_counter() - start
        path = golden_path(args.out, package.name)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
        if args.check:
            delta = diff(path, text)
            sidecar = digest_path(args.out, package.name)
            if not delta and (not sidecar.is_file() or sidecar.read_text(encoding="utf-8").strip()
                              != golden_digest(package)):
                print(f"{path}: up to date, but its digest file {sidecar.name} is not (run "
                      f"`{regenerate_command(args.specs, args.out)}`): test runs generate its cases instead of "
                      f"loading them")
            elif delta:
                stale += 1
                print(f"{path}: out of date (run `{regenerate_command(args.specs, args.out)}` and review the diff)\n{delta}")
            else:
                print(f"{path}: up to date")
        else:
            path.write_text(text, encoding="utf-8")
            digest_path(args.out, package.name).write_text(golden_digest(package) + "\n", encoding="utf-8")
            print(f"{path}: {text.count(chr(10) + '- id: ')} cases ({elapsed:.2f}s)")
    return 1 if stale else 0
