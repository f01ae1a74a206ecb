"""A digest of every plan the golden calls make: proof that a change to the engine changed no plan.

    PYTHONPATH=. python3 scripts/plan_digest.py            # one line per package: calls planned, sha256
    PYTHONPATH=. python3 scripts/plan_digest.py --jinja    # the same with every expression run by Jinja2's sandbox

Each golden case's call is planned on its own profile and tunables, and once more on the unbounded profile with
the default tunables (what ``Checker.contract`` plans); the digest covers the whole plan (``repr``: variant,
constants, bindings with their declarations and uniform bytes, dispatch, outputs) or the whole refusal (error
type, message, reason, argument, per-variant failures). Run it before and after a change: the lines must match.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cases.golden import CASES_DIR, golden_path, load_golden  # noqa: E402
from conformance.certify.checker import unbounded_profile  # noqa: E402
from conformance.config import REPO_SPECS  # noqa: E402
from conformance.engine import expressions  # noqa: E402
from conformance.engine.package import find_package_dirs, load_package  # noqa: E402
from conformance.engine.planner import Planner  # noqa: E402
from conformance.errors import ConformanceError  # noqa: E402


def outcome_text(planner: Planner, args: dict, profile, tunables) -> str:
    """The plan's repr, or the refusal's type, message and fields."""
    try:
        return repr(planner.plan_case(args, profile, tunables))
    except ConformanceError as exc:
        fields = {k: getattr(exc, k, None) for k in ("reason", "argument", "pointer", "failures")}
        return f"{type(exc).__name__}: {exc} {fields!r}"


def package_digest(directory: Path, golden: Path = CASES_DIR) -> tuple[str, int, int]:
    """(op id, calls planned, sha256 over every outcome in case order)."""
    package = load_package(directory)
    planner, unbounded = Planner(package.manifest), unbounded_profile()
    digest, count = hashlib.sha256(), 0
    for case in load_golden(golden_path(golden, package.name)):
        args = case.call_args()
        for profile, tunables in ((case.profile, dict(case.tunables)), (unbounded, None)):
            digest.update(outcome_text(planner, args, profile, tunables).encode("utf-8") + b"\0")
            count += 1
    return package.name, count, digest.hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", type=Path, default=REPO_SPECS)
    ap.add_argument("--jinja", action="store_true", help="evaluate every expression through Jinja2's sandbox")
    args = ap.parse_args(argv)
    if args.jinja:
        expressions.FAST_PATH = False
    for directory in find_package_dirs(args.specs):
        name, count, digest = package_digest(directory)
        print(f"{name}: {count} plans, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
