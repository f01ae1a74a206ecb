"""pytest plugin: certify kernel packages on a real WebGPU device.

``pytest conformance/ --device=vulkan`` collects one test per case of every package under ``--specs``
(default: the repository's ``specs/``). Registered through the ``pytest11`` entry point, so it is loaded by
every pytest run of the environment: this module holds only options and hooks and imports nothing heavy.
``pytest_configure`` checks the options and registers the run's state, a
:class:`~conformance.plugin.state.RunState` whose methods are the hooks that keep verdicts and write the report
(:mod:`~conformance.plugin.reporting`) and the terminal summary (:mod:`~conformance.plugin.summary`). The
cases, the implementation under test and its device live in :mod:`conformance.plugin.session`, loaded by
``conformance/test_kernels.py`` only when a run collects the conformance tests; the state holds plain data, so the
xdist controller writes the report without loading the engine.
"""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import pytest

from conformance.certify import report
from conformance.certify.repro import index as repro_index
from conformance.config import ADAPTER_REQUESTS, BACKENDS, JS_RUNTIMES, WEBGPU
from conformance.errors import ConformanceError
from conformance.files import check_no_links
from conformance.plugin.state import STATE, RunState

__all__ = ["RunState"]  # the run's state, registered by pytest_configure


def pytest_addoption(parser):
    group = parser.getgroup("conformance", "WebGPU kernel conformance")
    group.addoption(
        "--device",
        choices=sorted(BACKENDS) + ["all"],
        default="auto",
        help="WebGPU backend to certify on (default: auto, preferring a GPU over a CPU adapter; all: "
        "every adapter, one column each)",
    )
    group.addoption(
        "--webgpu",
        choices=WEBGPU + JS_RUNTIMES + ("all",),
        default="wgpu",
        help="the WebGPU implementation: wgpu (wgpu-native, naga; default), dawn (Dawn, Tint), "
        "chromium (a Chromium page driven by Playwright: Blink, Dawn's wire, Tint), firefox (a "
        "headless firefox-esr at the served page: Gecko, wgpu, naga), or all (one column each); "
        "with --impl js-loader also node (Node with Dawn for Node) or deno (Deno, wgpu)",
    )
    group.addoption(
        "--browser-endpoint",
        default=None,
        metavar="WS_URL",
        help="the chromium column connects to this Playwright server (npx playwright run-server; a "
        "Playwright grid or device farm) instead of launching a local Chromium",
    )
    group.addoption(
        "--browser-cdp",
        default=None,
        metavar="HTTP_URL",
        help="the chromium column connects to a Chrome already running with --remote-debugging-port",
    )
    group.addoption(
        "--webgpu-adapter",
        choices=ADAPTER_REQUESTS,
        default=None,
        help="the adapter a Chromium the suite launches gives WebGPU: gpu (the machine's hardware "
        "Vulkan adapter; a software fallback is said in the report), software (SwiftShader), or "
        "auto (default: gpu where wgpu finds a hardware Vulkan adapter, else software)",
    )
    group.addoption(
        "--adapter",
        default=None,
        metavar="SUBSTRING",
        help="use the adapter whose name contains SUBSTRING (case-insensitive)",
    )
    group.addoption(
        "--specs",
        default=None,
        metavar="DIR",
        help="kernel packages to certify: a directory of packages or one package directory "
        "(default: the repository's specs/)",
    )
    group.addoption(
        "--golden",
        default=None,
        metavar="DIR",
        help="golden case files of the packages under --specs (DIR/<op id>.yaml with its .digest), "
        "loaded and run; a missing or stale one fails its package (default: the suite's cases/ "
        "for its own packages, generated for others)",
    )
    group.addoption(
        "--run-heavy", action="store_true", default=False, help="also run the heavy cases (buffers of hundreds of MB)"
    )
    group.addoption(
        "--conformance-report",
        default=None,
        metavar="PATH",
        help="write a JSON report to PATH and a Markdown summary beside it",
    )
    group.addoption(
        "--impl",
        default="manifest",
        metavar="NAME",
        help="the implementation to certify: manifest (default: this project's runtime over --specs), "
        "onnxruntime-cpu, onnxruntime-webgpu, or one registered under the entry point group "
        "conformance.implementations",
    )
    group.addoption(
        "--divergences",
        choices=("fail", "xfail"),
        default="fail",
        help="cases where an implementation rejects what the manifest accepts, or accepts what it "
        "rejects: failures (default) or xfails (listed in the report either way)",
    )
    group.addoption(
        "--conformance-progress",
        choices=("auto", "on", "off"),
        default="auto",
        help="per-column progress lines (done / total, failures, time left): auto = with --run-heavy "
        "or a browser column",
    )
    group.addoption(
        "--expectations",
        default=None,
        metavar="FILE",
        help="YAML list of {id: pattern, reason: text}: known failures, run as strict xfails "
        "(in a pattern * and ? are wildcards, all else is literal)",
    )
    group.addoption(
        "--repro-dir",
        default=None,
        metavar="DIR",
        help="for an implementation outside this suite (--impl other than manifest): write a standalone "
        "reproduction of each group of identical failures (divergences, value failures) to DIR, "
        "using the implementation alone, with DIR/index.md and DIR/index.json listing the groups",
    )
    group.addoption(
        "--rerun-as",
        default=None,
        metavar="COMMAND",
        help="the command a failure's rerun line starts with, the case appended as --case NAME "
        "(certify passes its own command line: its pytest's files are gone once it exits)",
    )
    group.addoption(
        "--stress",
        type=int,
        nargs="?",
        const=3,
        default=0,
        metavar="RUNS",
        help="race provocation: every shader rewritten with invocation-dependent delays before each "
        "workgroup-memory access and barrier, each accepted case run RUNS times (default 3) with "
        "different delay seeds; outputs must pass every time and be identical across the runs",
    )


#: Remote browser options -> (the environment variable the chromium backend reads, the URL schemes it takes).
BROWSER_OPTIONS = {
    "browser_endpoint": ("CONFORMANCE_BROWSER_ENDPOINT", ("ws://", "wss://")),
    "browser_cdp": ("CONFORMANCE_BROWSER_CDP", ("http://", "https://", "ws://", "wss://")),
}


def pytest_configure(config):
    """Options checked before anything runs; the run's state built and registered as a plugin."""
    for dest, (variable, schemes) in BROWSER_OPTIONS.items():
        url = config.getoption(dest, None)
        if url is None:
            continue
        if not url.startswith(schemes):
            raise pytest.UsageError(
                f"--{dest.replace('_', '-')} {url!r}: expected a URL starting with {' or '.join(schemes)}"
            )
        os.environ[variable] = url  # read where the browser is opened: this process and xdist workers alike
    if config.getoption("webgpu_adapter", None):
        os.environ["CONFORMANCE_WEBGPU_ADAPTER"] = config.getoption("webgpu_adapter")
    webgpu, impl = config.getoption("webgpu", "wgpu"), config.getoption("impl", "manifest") or "manifest"
    if webgpu in JS_RUNTIMES and impl.split(":", 1)[0] != "js-loader":
        raise pytest.UsageError(
            f"--webgpu={webgpu} runs a JavaScript loader outside browsers: use it with --impl "
            f"js-loader[:MODULE.mjs] (--impl {impl} opens its devices through wgpu, dawn, chromium "
            f"or firefox)"
        )
    config.addinivalue_line("markers", "heavy: a case with buffers of hundreds of MB (run with --run-heavy)")
    config.addinivalue_line("markers", "load_error: a package whose manifest could not be loaded")
    state = config.stash[STATE] = RunState(config)
    config.pluginmanager.register(state, "conformance-run")
    path = config.getoption("conformance_report", None)
    if path and not hasattr(config, "workerinput"):  # refused now, not after every case has run
        try:
            report.check_paths(Path(path))
        except ConformanceError as err:
            raise pytest.UsageError(f"--conformance-report {path}: {err}") from None
    repro_dir = config.getoption("repro_dir", None)
    if repro_dir and not hasattr(config, "workerinput"):
        try:
            repro_index.check_dir(Path(repro_dir))
        except ConformanceError as err:
            raise pytest.UsageError(f"--repro-dir {repro_dir}: {err}") from None
    _no_links_in_named_folders(config)
    _no_worker_replacement_under_loadgroup(config)
    if not hasattr(config, "workerinput") and threading.current_thread() is threading.main_thread():
        state.catch_interrupt()


def _no_links_in_named_folders(config) -> None:
    """``--specs`` and ``--golden`` are resolved where they are read, which would hide a symlink in them (a pull
    request's ``kernel-cases -> /home``): refused here, before anything is read."""
    for dest in ("specs", "golden"):
        value = config.getoption(dest, None)
        if value:
            try:
                check_no_links(Path(value))
            except ConformanceError as err:
                raise pytest.UsageError(f"--{dest} {err}") from None


def _no_worker_replacement_under_loadgroup(config) -> None:
    """Under ``--dist loadgroup``, pytest-xdist 3.8 can hang for ever once it replaces a crashed worker (upstream
    issues 1323, 1327 and 1378): unless the user chose a restart count, a crashed worker is not replaced, and its
    cases are reported as not run (``not-run``, with why) instead of the run never ending."""
    option = config.option
    if getattr(option, "dist", None) == "loadgroup" and getattr(option, "maxworkerrestart", "") is None:
        option.maxworkerrestart = "0"


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """Collection builds every case of the golden files: tens of MB of objects that live for the whole run. The
    cyclic collector would scan them again and again (full collections during collection, then during the run,
    then five at pytest's exit), so it waits during collection and then leaves them out (``gc.freeze``)."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
