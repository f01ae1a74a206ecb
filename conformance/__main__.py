"""``python -m conformance <command>``; the commands live in :mod:`conformance.cli`."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

# ``python -m conformance`` puts the current directory first on sys.path: in a kernel repository with a folder
# of its own named ``cases/`` (golden files) or ``reference/``, that folder would shadow this project's package
# of the name. Only this project's own root may stay first.
if sys.path and Path(sys.path[0] or ".").resolve() != Path(__file__).resolve().parents[1]:
    del sys.path[0]

from conformance.cli import COMMANDS  # noqa: E402  (after the sys.path fix above)
from conformance.config import install_hint  # noqa: E402
from conformance.errors import ConformanceError  # noqa: E402

#: Our own top-level packages: one of them missing is a broken install, shown as the traceback it is.
OWN = {"conformance", "cases", "reference"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"conformance.cli.{name}").register(sub)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConformanceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        missing = (err.name or "").split(".")[0]
        if not missing or missing in OWN:
            raise
        print(
            f"error: {args.command} needs the Python package {missing!r}, which is not installed: "
            f"{install_hint(missing)}",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
