"""``python -m conformance <command>``; the commands live in :mod:`conformance.cli`."""

from __future__ import annotations

import argparse
import importlib
import sys

from conformance.cli import COMMANDS
from conformance.errors import ConformanceError


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


if __name__ == "__main__":
    sys.exit(main())
