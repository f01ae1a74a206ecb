"""Subcommands of ``python -m conformance``: each module here has ``register(subparsers)``.

A subcommand's function takes the parsed arguments and returns the exit code. What a command runs is imported
when it runs (:mod:`conformance.cli.lazy`): ``--help`` works without NumPy or a WebGPU implementation installed.
"""

from conformance.config import BACKENDS, REPO_SPECS, WEBGPU

COMMANDS = ("bench", "accuracy", "lint", "diff", "export", "cases", "mutate", "merge", "serve", "new",
            "certify")


def add_packages_and_device(parser) -> None:
    """``--specs`` (packages to run, default the repository's) and the device they run on."""
    parser.add_argument("--specs", default=str(REPO_SPECS))
    parser.add_argument("--device", default="auto", choices=sorted(BACKENDS))
    parser.add_argument("--adapter", default=None)
    add_webgpu(parser)


def add_webgpu(parser, default: str | None = "wgpu") -> None:
    parser.add_argument("--webgpu", default=default, choices=WEBGPU,
                        help="the WebGPU implementation: wgpu (wgpu-native, naga), dawn (Dawn, Tint), firefox (a "
                             "headless firefox-esr at the served page) or chromium "
                             "(a headless Chromium page)" + (f"; default {default}" if default else ""))
