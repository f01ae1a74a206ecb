"""``diff OLD [NEW]``: the calls whose planned outcome changes between two versions of the packages."""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

from conformance.cli.lazy import on_use

d = on_use("conformance.tools.diff")


def _diff(args) -> int:
    start = time.perf_counter()
    repo = Path(args.repo).resolve() if args.repo else d.repo_root()
    with tempfile.TemporaryDirectory(prefix="conformance-diff-") as scratch:
        sides = [d.resolve(ref, repo, Path(scratch), args.specs_path, args.golden_path) for ref in (args.old, args.new)]
        old, new = (d.packages(s) for s in sides)
        diffs = d.note_record_changes(d.diff(old, new), sides[0], new)
        gate = d.unacknowledged(diffs, *sides) if args.gate else None
    changed = any(x.changed for x in diffs)
    if args.json:
        print(json.dumps(d.as_json(diffs, *sides, gate), indent=2))
    else:
        print(d.table(diffs))
        for line in gate or ():
            print(f"unacknowledged: {line}")
        if gate:
            print(f"then check again: `{gate_command(args)}`")
        if args.gate and changed and not gate:
            print("gate: behaviour changes are acknowledged by the updated golden case files")
    print(
        f"diff {sides[0].label} -> {sides[1].label}: {'changes' if changed else 'no change'} "
        f"({time.perf_counter() - start:.1f}s)",
        file=sys.stderr,
    )
    if args.gate:
        return 1 if gate else 0
    return 1 if changed else 0


def gate_command(args) -> str:
    """This gate as typed again: the revisions, and --repo, --specs-path, --golden-path where not the defaults."""
    words = ["python", "-m", "conformance", "diff", args.old, *([args.new] if args.new else []), "--gate"]
    for flag, value, default in (
        ("--repo", args.repo, None),
        ("--specs-path", args.specs_path, "specs"),
        ("--golden-path", args.golden_path, "cases"),
    ):
        if value != default:
            words += [flag, str(value)]
    return " ".join(shlex.quote(w) for w in words)


def register(sub) -> None:
    p = sub.add_parser("diff", help="behavioural diff of kernel packages between two directories or git revisions")
    p.add_argument("old", help="a package directory, a directory of packages, or a git revision (HEAD~1, main)")
    p.add_argument("new", nargs="?", default=None, help="the same kinds (default: the work tree)")
    p.add_argument("--json", action="store_true", help="print the changes as JSON")
    p.add_argument(
        "--gate",
        action="store_true",
        help="exit 1 only for changes whose golden case file was not regenerated in the same change",
    )
    p.add_argument("--repo", default=None, help="the git repository revisions name (default: the one around .)")
    p.add_argument("--specs-path", default="specs", help="packages' folder inside the repository (default specs)")
    p.add_argument("--golden-path", default="cases", help="golden files' folder inside the repository (default cases)")
    p.set_defaults(func=_diff)
