"""Subcommands of ``python -m conformance``: each module here has ``register(subparsers)``.

A subcommand's function takes the parsed arguments and returns the exit code. What a command runs is imported
when it runs (:mod:`conformance.cli.lazy`): ``--help`` works without NumPy or a WebGPU implementation installed.
"""

import gc
from contextlib import contextmanager

from conformance.config import BACKENDS, REPO_SPECS, WEBGPU

COMMANDS = ("bench", "accuracy", "lint", "diff", "export", "cases", "mutate", "merge", "serve", "new", "certify")


def add_packages_and_device(parser) -> None:
    """``--specs`` (packages to run, default the repository's) and the device they run on."""
    parser.add_argument("--specs", default=str(REPO_SPECS))
    parser.add_argument("--device", default="auto", choices=sorted(BACKENDS))
    parser.add_argument("--adapter", default=None)
    add_webgpu(parser)


def add_webgpu(parser, default: str | None = "wgpu") -> None:
    parser.add_argument(
        "--webgpu",
        default=default,
        choices=WEBGPU,
        help="the WebGPU implementation: wgpu (wgpu-native, naga), dawn (Dawn, Tint), firefox (a "
        "headless firefox-esr at the served page) or chromium "
        "(a headless Chromium page)" + (f"; default {default}" if default else ""),
    )


#: Garbage collection thresholds while a batch command runs (Python's defaults are 700, 10, 10).
BATCH_GC_THRESHOLDS = (10000, 50, 50)


@contextmanager
def batch_collections():
    """Collect cyclic garbage seldom while the body runs, then restore the thresholds.

    The case generator keeps hundreds of thousands of objects until the command ends (plans, scopes, compiled
    expressions) and makes little cyclic garbage; at the defaults every full collection walks all of them again,
    and as the caches grow there are dozens."""
    thresholds = gc.get_threshold()
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
