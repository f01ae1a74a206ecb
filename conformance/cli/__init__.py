"""Subcommands of ``python -m conformance``: each module here has ``register(subparsers)``.

A subcommand's function takes the parsed arguments and returns the exit code.
"""

COMMANDS = ("bench", "accuracy", "lint", "diff", "export")
