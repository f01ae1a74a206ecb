"""``new OP_ID --kind elementwise|rows [--dir DIR]``: a kernel repository's skeleton for a new op (see
:mod:`conformance.tools.skeleton`)."""

from __future__ import annotations

import os
from pathlib import Path

from conformance.cli.lazy import on_use

next_steps = on_use("conformance.tools.skeleton", "next_steps")
write_skeleton = on_use("conformance.tools.skeleton", "write_skeleton")
KINDS = ("elementwise", "rows")  # conformance.tools.skeleton.KINDS (a test checks they agree)


def _new(args) -> int:
    root = Path(args.dir)
    written, notes = write_skeleton(args.op, args.kind, root, args.suite_url)
    for path in written:
        print(f"wrote {path}")
    for note in notes:
        print(f"note: {note}")
    print(next_steps(args.op))
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "new",
        help="write a kernel repository's skeleton for a new op: package, op record, golden "
        "files, pre-commit, CI and tox configuration, which lint, generate and certify",
    )
    p.add_argument("op", metavar="OP_ID", help="the op id, <domain>.<Name> (com.example.Silu)")
    p.add_argument(
        "--kind",
        choices=KINDS,
        required=True,
        help="elementwise (Y = X, vec4 and scalar variants) or rows (each row minus its first element)",
    )
    p.add_argument("--dir", default=".", help="the kernel repository's root (default: the current directory)")
    p.add_argument(
        "--suite-url",
        default=os.environ.get("CONFORMANCE_SUITE_URL") or None,
        metavar="URL",
        help="where tox.ini and the CI job pip-install the suite from, e.g. "
        "git+https://github.com/ORG/webgpu-kernel-conformance (a git URL is pinned to this "
        "version's tag, @vX.Y.Z); default CONFORMANCE_SUITE_URL, else a placeholder to replace",
    )
    p.set_defaults(func=_new)
