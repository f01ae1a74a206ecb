"""Subcommands of ``python -m conformance``: each module here has ``register(subparsers)``.

A subcommand's function takes the parsed arguments and returns the exit code.
"""

COMMANDS = ("bench", "accuracy", "lint", "diff", "export")


def add_packages_and_device(parser) -> None:
    """``--specs`` (packages to run, default the repository's) and the device they run on."""
    from conformance.engine.package import REPO_SPECS
    parser.add_argument("--specs", default=str(REPO_SPECS))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--adapter", default=None)
