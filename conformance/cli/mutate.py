"""``mutate``: the suite's fault-detection score: mutants of each package's templates and manifest, run against
the package's stored cases; a JSON report and its Markdown (see :mod:`conformance.tools.mutate`)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from conformance.cli import add_webgpu
from conformance.cli.lazy import on_use
from conformance.config import REPO_SPECS

find_package_dirs = on_use("conformance.engine.package", "find_package_dirs")
load_package = on_use("conformance.engine.package", "load_package")
mutate_packages = on_use("conformance.tools.mutate", "mutate_packages")
package_mutants = on_use("conformance.tools.mutate", "package_mutants")
load_arguments = on_use("conformance.tools.mutate.equivalence", "load_arguments")


def _mutate(args) -> int:
    dirs = [d for ref in (args.packages or [str(REPO_SPECS)]) for d in find_package_dirs(Path(ref))]
    if not dirs:
        print("error: no kernel package found", file=sys.stderr)
        return 2
    if args.list:
        for d in dirs:
            for m in package_mutants(load_package(d)):
                if not args.only or re.search(args.only, m.id):
                    print(f"{m.id}\t{m.description}")
        return 0
    try:  # read before anything runs: a bad file is one clear error, not a run without its arguments
        arguments = load_arguments(Path(args.equivalent)) if args.equivalent else None
    except ValueError as err:
        print(f"error: --equivalent {err}", file=sys.stderr)
        return 2
    if args.webgpu:
        os.environ["CONFORMANCE_WEBGPU"] = args.webgpu  # the worker processes and pytest runs inherit it
    if args.device:
        os.environ["CONFORMANCE_DEVICE"] = args.device
    result = mutate_packages(
        dirs,
        jobs=args.jobs,
        only=args.only,
        out=Path(args.out),
        timeout=args.timeout,
        limit=args.limit,
        via_pytest=args.pytest,
        arguments=arguments,
    )
    print(
        f"kill rate {100 * result['kill_rate']:.1f}%: {result['killed']} killed, {result['survived']} surviving, "
        f"{result['equivalent']} equivalent, {result['alternative']} alternative correct kernels; report {args.out} "
        f"and {Path(args.out).with_suffix('.md')}"
    )
    return 0 if result["survived"] == 0 else 1


def register(sub) -> None:
    p = sub.add_parser(
        "mutate",
        help="the suite's fault-detection score: mutate each package's templates and "
        "manifest, run its stored cases against every mutant, report the kill rate",
        description="The suite's fault-detection score: mutants of each package's shader templates "
        "and manifest, each run against the package's stored cases (stopped at the "
        "first failing case); the kill rate over the non-equivalent mutants, in JSON "
        "and Markdown.",
    )
    p.add_argument("packages", nargs="*", help="package directories, or directories of packages (default: specs/)")
    add_webgpu(p, default=None)
    p.add_argument(
        "--device",
        default=None,
        help="backend the mutants run on (default: CONFORMANCE_DEVICE, else "
        "vulkan); gl reaches llvmpipe without shader-f16 here",
    )
    p.add_argument("--jobs", "-j", type=int, default=2, help="mutants run at a time (default 2)")
    p.add_argument("--only", default=None, help="only mutants whose id matches this regular expression")
    p.add_argument("--limit", type=int, default=None, help="at most this many mutants per package")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--out", default="mutation-report.json", help="JSON report (Markdown beside it)")
    p.add_argument(
        "--equivalent",
        default=None,
        metavar="FILE",
        help="a kernel repository's own arguments for equivalent mutants, in the format of the suite's "
        "equivalent.yaml (a list of {package, pattern, why}); read before the shipped ones",
    )
    p.add_argument("--timeout", type=float, default=300, help="seconds per mutant run (with --pytest)")
    p.add_argument(
        "--pytest",
        action="store_true",
        help="run each mutant as its own `pytest conformance/ -x -m test_json` process (slower: every "
        "run pays pytest's start-up and case generation) instead of the default worker processes, "
        "which run the plugin's CaseChecker over the same stored cases, one device per worker",
    )
    p.set_defaults(func=_mutate)
