"""pytest plugin: certify kernel packages on a real WebGPU device.

``pytest conformance/ --device=vulkan`` collects one test per case of every package under ``--specs``
(default: the repository's ``specs/``). Registered through the ``pytest11`` entry point, so it is loaded by
every pytest run of the environment: this module holds only options and hooks and imports nothing heavy. The
cases, the implementation under test and its device live in :mod:`conformance.plugin.session`, loaded by
``conformance/test_kernels.py`` only when a run collects the conformance tests. What this module keeps between
hooks is plain data on a :class:`RunState` (verdicts, what was expected to run, what the workers told), so the
xdist controller writes the report without loading the engine.
"""

from __future__ import annotations

import gc
import json
import os
import re
import shlex
import signal
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from _pytest.junitxml import xml_key  # the --junitxml writer of this run, to name each case's classname

from conformance.certify import evidence, matrix, quote, report, report_html, repro_index
from conformance.certify.outcomes import verdict_for
from conformance.plugin import progress
from conformance.config import ADAPTER_REQUESTS, BACKENDS, WEBGPU
from conformance.errors import ConformanceError
from conformance.files import check_no_links
from conformance.plugin import expectations

VERDICT_KEY = "conformance"
#: The user property of a case an ``--expectations`` entry covers: that entry's pattern and reason, as JSON.
EXPECTATION_KEY = "conformance_expectation"
#: The user property of a failing case with a standalone repro entry (--repro-dir), as JSON.
REPRO_KEY = "conformance_repro"
#: What a worker sends the controller at its end (xdist's workeroutput): identity, device, heavy count.
WORKER_KEY = "conformance"


def pytest_addoption(parser):
    group = parser.getgroup("conformance", "WebGPU kernel conformance")
    group.addoption("--device", choices=sorted(BACKENDS) + ["all"], default="auto",
                    help="WebGPU backend to certify on (default: auto, preferring a GPU over a CPU adapter; all: "
                         "every adapter, one column each)")
    group.addoption("--webgpu", choices=WEBGPU + ("all",), default="wgpu",
                    help="the WebGPU implementation: wgpu (wgpu-native, naga; default), dawn (Dawn, Tint), "
                         "chromium (a Chromium page driven by Playwright: Blink, Dawn's wire, Tint), firefox (a "
                         "headless firefox-esr at the served page: Gecko, wgpu, naga), or all (one column each)")
    group.addoption("--browser-endpoint", default=None, metavar="WS_URL",
                    help="the chromium column connects to this Playwright server (npx playwright run-server; a "
                         "Playwright grid or device farm) instead of launching a local Chromium")
    group.addoption("--browser-cdp", default=None, metavar="HTTP_URL",
                    help="the chromium column connects to a Chrome already running with --remote-debugging-port")
    group.addoption("--webgpu-adapter", choices=ADAPTER_REQUESTS, default=None,
                    help="the adapter a Chromium the suite launches gives WebGPU: gpu (the machine's hardware "
                         "Vulkan adapter; a software fallback is said in the report), software (SwiftShader), or "
                         "auto (default: gpu where wgpu finds a hardware Vulkan adapter, else software)")
    group.addoption("--adapter", default=None, metavar="SUBSTRING",
                    help="use the adapter whose name contains SUBSTRING (case-insensitive)")
    group.addoption("--specs", default=None, metavar="DIR",
                    help="kernel packages to certify: a directory of packages or one package directory "
                         "(default: the repository's specs/)")
    group.addoption("--golden", default=None, metavar="DIR",
                    help="golden case files of the packages under --specs (DIR/<op id>.yaml with its .digest), "
                         "loaded and run; a missing or stale one fails its package (default: the suite's cases/ "
                         "for its own packages, generated for others)")
    group.addoption("--run-heavy", action="store_true", default=False,
                    help="also run the heavy cases (buffers of hundreds of MB)")
    group.addoption("--conformance-report", default=None, metavar="PATH",
                    help="write a JSON report to PATH and a Markdown summary beside it")
    group.addoption("--impl", default="manifest", metavar="NAME",
                    help="the implementation to certify: manifest (default: this project's runtime over --specs), "
                         "onnxruntime-cpu, onnxruntime-webgpu, or one registered under the entry point group "
                         "conformance.implementations")
    group.addoption("--divergences", choices=("fail", "xfail"), default="fail",
                    help="cases where an implementation rejects what the manifest accepts, or accepts what it "
                         "rejects: failures (default) or xfails (listed in the report either way)")
    group.addoption("--conformance-progress", choices=("auto", "on", "off"), default="auto",
                    help="per-column progress lines (done / total, failures, time left): auto = with --run-heavy "
                         "or a browser column")
    group.addoption("--expectations", default=None, metavar="FILE",
                    help="YAML list of {id: pattern, reason: text}: known failures, run as strict xfails "
                         "(in a pattern * and ? are wildcards, all else is literal)")
    group.addoption("--repro-dir", default=None, metavar="DIR",
                    help="for an implementation outside this suite (--impl other than manifest): write a standalone "
                         "reproduction of each group of identical failures (divergences, value failures) to DIR, "
                         "using the implementation alone, with DIR/index.md and DIR/index.json listing the groups")
    group.addoption("--rerun-as", default=None, metavar="COMMAND",
                    help="the command a failure's rerun line starts with, the case appended as --case NAME "
                         "(certify passes its own command line: its pytest's files are gone once it exits)")
    group.addoption("--stress", type=int, nargs="?", const=3, default=0, metavar="RUNS",
                    help="race provocation: every shader rewritten with invocation-dependent delays before each "
                         "workgroup-memory access and barrier, each accepted case run RUNS times (default 3) with "
                         "different delay seeds; outputs must pass every time and be identical across the runs")


class RunState:
    """Plain data of one pytest run: options, verdicts, what should run, and what the case runner reports."""

    def __init__(self, config):
        self.config = config
        self.backend = config.getoption("device")
        self.adapter = config.getoption("adapter")
        self.webgpu = config.getoption("webgpu")
        self.impl_name = config.getoption("impl") or "manifest"
        self.stress = config.getoption("stress") or 0
        if self.stress < 0:
            raise pytest.UsageError(f"--stress {self.stress}: expected the number of runs per case (1 or more)")
        if self.stress and self.impl_name != "manifest":
            raise pytest.UsageError(f"--stress rewrites this project's rendered shaders: it applies to --impl "
                                    f"manifest only, not {self.impl_name}")
        self.repro_dir = config.getoption("repro_dir", None)
        if self.repro_dir and self.impl_name == "manifest":
            raise pytest.UsageError("--repro-dir: writes repros of an implementation outside this suite (--impl "
                                    "onnxruntime-cpu, ...); the manifest runtime's failures rerun with their rerun "
                                    "command")
        #: With --repro-dir: each failing case's repro entry (conformance.certify.repro.ReproCollector.add) by node
        #: id, sent with its test report (so a worker that dies keeps its entries); the index, once written.
        self.repro_entries: dict[str, dict] = {}
        self.repro_index: dict | None = None
        self._rerun_heads: dict[str, tuple[str, str]] = {}   # module -> (the command before the case, its file)
        self.verdicts: list[dict] = []
        self.ran: dict[str, int] = {}           # node id -> index of its verdict
        self.expected_ids: set[str] = set()
        self.progress = None      # a ColumnProgress once the cases are known, where progress is wanted
        self.compilations: dict[int, int] = {}
        self.deselected_heavy = 0
        #: The heavy cases selected but not run (evidence.left_out_entry each): their cells are judged too.
        self.left_out: list[dict] = []
        #: Filled by the case runner (or the workers' runners): package identities, the columns (slug -> device
        #: summary and error), heavy cases in total, and why adapters were left out of --device=all.
        self.identity: list[dict] = []
        self.columns: dict[str, dict] = {}
        self.column_notes: list[str] = []
        self.heavy_total = 0
        self.case_sources: list[str] = []   # per package: the golden file it ran, or why its cases were generated
        self.weak: list[dict] = []   # the generator's weakness flags of the packages ({package, kind, message})
        self.templates: list[dict] = []   # template branch coverage (conformance.certify.templates), for a report
        self.interrupted = False
        self.previous_sigint = None
        #: The reports (one per column) once the session has finished: the terminal summary prints their result.
        self.results: list[dict] = []
        #: Whether this run collected the conformance tests (here, or on a worker): only such a run has a result,
        #: even one that selected no case (nothing checked).
        self.collected = False
        #: Why this run cannot certify anything at all (an --impl that is not available here): one error, up front.
        self.fatal: str | None = None

    def record(self, nodeid: str, verdict: dict) -> None:
        """One verdict per test: a test run again (on a replacement worker) replaces its earlier verdict."""
        index = self.ran.get(nodeid)
        if index is None:
            self.ran[nodeid] = len(self.verdicts)
            self.verdicts.append(verdict)
        else:
            self.verdicts[index] = verdict

    def rerun_command(self, item) -> str:
        """The command that reruns exactly ``item``, typed where this run was started: this run's own
        interpreter and options (``-p`` plugins, ``--specs``, ``--impl``, ``--device``, ``--expectations``...,
        as given), less what selects, schedules or writes files (paths, ``-k``, ``-m``, ``-x``, ``-n``, reports),
        plus the case: its module under ``--pyargs``, else its file relative to the invocation directory."""
        prefix = self.config.getoption("rerun_as", None)
        if prefix:
            return f"{prefix} --case {shlex.quote(item.name)}"
        module = item.module.__name__ if self.config.getoption("pyargs", False) else str(item.path)
        if module not in self._rerun_heads:   # the same for every case of a module: made once
            params = self.config.invocation_params
            options = _rerun_options(list(params.args), _option_actions(self.config))
            where = module if self.config.getoption("pyargs", False) else _relative(item.path, Path(params.dir))
            env = [f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []
            self._rerun_heads[module] = (" ".join(shlex.quote(w) for w in [*env, sys.executable, "-m", "pytest",
                                                                           *options]), where)
        head, where = self._rerun_heads[module]
        return f"{head} {shlex.quote(f'{where}::{item.name}')}"

    def merge_columns(self, columns: dict[str, dict]) -> None:
        for slug, col in columns.items():
            have = self.columns.setdefault(slug, {"slug": slug, "device": None, "error": None})
            have["device"] = have["device"] or col.get("device")
            have["error"] = have["error"] or col.get("error")

    def merge_worker(self, data: dict) -> None:
        self.collected = True
        if data.get("identity") and not self.identity:
            self.identity = data["identity"]
        self.merge_columns(data.get("columns") or {})
        self.heavy_total = max(self.heavy_total, data.get("heavy_total", 0))
        self.case_sources = self.case_sources or data.get("case_sources") or []
        self.weak = self.weak or data.get("weak") or []
        self.templates = self.templates or data.get("templates") or []
        self.left_out = self.left_out or data.get("left_out") or []

    def reports(self, verdicts: list[dict], deselected_heavy: int, interrupted: bool = False) -> list[dict]:
        """One report per column (verdicts of a single-column run carry no column)."""
        implementation = "manifest-runtime" if self.impl_name == "manifest" else self.impl_name
        out = []
        # every column a case names, even one whose every worker died before telling the controller about it
        slugs = sorted(set(self.columns) | {v["column"] for v in verdicts if v.get("column")})
        for slug in slugs or [""]:
            mine = [v for v in verdicts if v.get("column", "") == slug or len(slugs) <= 1]
            skipped = dict(Counter(v["detail"] for v in mine if v["status"] == "skipped"))
            col = self.columns.get(slug, {})
            left_out = [v for v in self.left_out if v.get("column", "") == slug or len(slugs) <= 1]
            data = report.build(mine, identity=self.identity, device=col.get("device"),
                                implementation=implementation, skipped_reasons=skipped,
                                deselected_heavy=deselected_heavy, interrupted=interrupted, weak=self.weak,
                                templates=self.templates, left_out=left_out)
            if col.get("error"):
                data.update(error=col["error"], conforms=False, result="does-not-conform")
            if self.fatal:
                data.update(error=self.fatal, conforms=False, result="nothing-checked")
            if slug:
                data["column"] = slug
            out.append(data)
        return out


#: Option destinations the rerun leaves out: they select, schedule or write, and the rerun names its one case.
RERUN_DROPS = {"keyword", "markexpr", "exitfirst", "maxfail", "numprocesses", "maxprocesses", "dist", "tx",
               "looponfail", "lf", "last_failed", "failedfirst", "stepwise", "stepwise_skip", "xmlpath",
               "conformance_report", "repro_dir", "deselect", "collectonly", "file_or_dir", "newfirst", "cacheclear",
               "rerun_as"}


def _option_actions(config) -> dict:
    """Option string -> argparse action of this run's command line (pytest keeps its parser private)."""
    parser = getattr(config._parser, "optparser", None)
    if parser is None and hasattr(config._parser, "_getparser"):
        parser = config._parser._getparser()
    return dict(getattr(parser, "_option_string_actions", {}))


def _rerun_options(args: list[str], actions: dict) -> list[str]:
    """``args`` less positional arguments (what to collect) and the options of :data:`RERUN_DROPS`."""
    kept, i = [], 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            continue
        name = arg.partition("=")[0]
        action = actions.get(name)
        words = [arg]
        if action is None and not arg.startswith("--") and arg[:2] in actions:
            action = actions[arg[:2]]                  # -kEXPR, -n2, -pPLUGIN: the value attached
            if action.nargs == 0:                      # -xq: flags run together
                flags = [f"-{c}" for c in arg[1:]]
                kept += [f for f in flags if f not in actions or actions[f].dest not in RERUN_DROPS]
                continue
        elif action is not None and action.nargs != 0 and "=" not in arg and i < len(args):
            words.append(args[i])
            i += 1
        if action is not None and action.dest in RERUN_DROPS:
            continue
        kept += words
    return kept


def _relative(path: Path, start: Path) -> str:
    try:
        return str(path.resolve().relative_to(start.resolve()))
    except ValueError:
        return str(path)


_STATE = pytest.StashKey[RunState]()
_CONFIG: dict = {}


def state_of(config) -> RunState:
    if _STATE not in config.stash:
        config.stash[_STATE] = RunState(config)
    return config.stash[_STATE]


#: Remote browser options -> (the environment variable the chromium backend reads, the URL schemes it takes).
BROWSER_OPTIONS = {"browser_endpoint": ("CONFORMANCE_BROWSER_ENDPOINT", ("ws://", "wss://")),
                   "browser_cdp": ("CONFORMANCE_BROWSER_CDP", ("http://", "https://", "ws://", "wss://"))}


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


def pytest_configure(config):
    _CONFIG["config"] = config  # pytest_runtest_logreport is given no config; one configured run per process
    for dest, (variable, schemes) in BROWSER_OPTIONS.items():
        url = config.getoption(dest, None)
        if url is None:
            continue
        if not url.startswith(schemes):
            raise pytest.UsageError(f"--{dest.replace('_', '-')} {url!r}: expected a URL starting with "
                                    f"{' or '.join(schemes)}")
        os.environ[variable] = url   # read where the browser is opened: this process and xdist workers alike
    if config.getoption("webgpu_adapter", None):
        os.environ["CONFORMANCE_WEBGPU_ADAPTER"] = config.getoption("webgpu_adapter")
    state_of(config)
    path = config.getoption("conformance_report", None)
    if path and not hasattr(config, "workerinput"):   # refused now, not after every case has run
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
        state = state_of(config)
        state.previous_sigint = signal.signal(signal.SIGINT, _on_interrupt(state))


def _no_worker_replacement_under_loadgroup(config) -> None:
    """Under ``--dist loadgroup``, pytest-xdist 3.8 can hang for ever once it replaces a crashed worker (upstream
    issues 1323, 1327 and 1378): unless the user chose a restart count, a crashed worker is not replaced, and its
    cases are reported as not run (``not-run``, with why) instead of the run never ending."""
    option = config.option
    if getattr(option, "dist", None) == "loadgroup" and getattr(option, "maxworkerrestart", "") is None:
        option.maxworkerrestart = "0"


def _on_interrupt(state: RunState):
    """Ctrl-C once: stop after the running case (its device work is abandoned, the device released), then write
    the partial report marked interrupted. Twice: exit at once (status 130)."""
    def handler(signum, frame):
        if state.interrupted:
            sys.stderr.write("\nconformance: interrupted again: exiting now, without the report\n")
            sys.stderr.flush()
            os._exit(130)
        state.interrupted = True
        sys.stderr.write("\nconformance: interrupted: stopping and writing the partial report "
                         "(Ctrl-C again to exit at once)\n")
        raise KeyboardInterrupt
    return handler


def pytest_unconfigure(config):
    state = config.stash.get(_STATE, None)
    if state is not None and state.previous_sigint is not None and \
            threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, state.previous_sigint)
    config.addinivalue_line("markers", "heavy: a case with buffers of hundreds of MB (run with --run-heavy)")
    config.addinivalue_line("markers", "load_error: a package whose manifest could not be loaded")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Expectations mark their cases; heavy cases leave the run unless ``--run-heavy``, after ``-k``, ``-m`` and
    ``--deselect`` chose (so that what is left out as heavy is what the user selected, and named as such)."""
    state = state_of(config)
    try:
        known = expectations.load(config.getoption("expectations"))
    except expectations.ExpectationsError as err:
        raise pytest.UsageError(str(err)) from None
    kept, heavy = [], []
    for item in items:
        if not config.getoption("run_heavy") and item.get_closest_marker("heavy"):
            heavy.append(item)
            continue
        kept.append(item)
        callspec = getattr(item, "callspec", None)
        if callspec is None or "conformance_case" not in callspec.params:
            continue
        for entry in known:
            if entry.covers(callspec.id):
                item.add_marker(pytest.mark.xfail(reason=f"{entry.reason} (expectation {entry.glob!r})", strict=True,
                                                  raises=(AssertionError, pytest.fail.Exception)))
                item.user_properties.append((EXPECTATION_KEY, json.dumps(entry.as_dict())))
                break
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = kept
        state.deselected_heavy = len(heavy)
        state.left_out = [_left_out(item) for item in heavy if _case_of(item) is not None]


def _case_of(item):
    """The (package, case, column) a conformance test runs, or None for any other test or a package's load error."""
    param = getattr(getattr(item, "callspec", None), "params", {}).get("conformance_case")
    return param if isinstance(param, tuple) else None


def _left_out(item) -> dict:
    _, case, column = _case_of(item)
    return evidence.left_out_entry({**verdict_for(case).as_dict(), "column": column.slug if column else None})


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


#: How the case runner's collection error for an --impl that cannot run here begins.
UNAVAILABLE = "--impl {name} is not available here: "


def pytest_collectreport(report):
    """An --impl that is not available here fails the conformance module's collection (the case runner): the run
    certifies nothing, and that error is its result, said once (here on the xdist controller, which learns it only
    from the workers' collection reports)."""
    config = _CONFIG.get("config")
    if config is None or not report.failed:
        return
    state = state_of(config)
    text = report.longreprtext.strip()
    if text.startswith(UNAVAILABLE.format(name=state.impl_name)):
        state.collected = True
        state.fatal = state.fatal or text[:2000]


def pytest_collection_finish(session):
    """What this process will run, after every deselection (-k, -m, heavy): cases without a result are reported."""
    state_of(session.config).expected_ids.update(
        item.nodeid for item in session.items if "conformance_case" in getattr(item, "fixturenames", ()))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """On the xdist controller: remember what the workers will run, to report cases that never ran."""
    state_of(node.config).expected_ids.update(i for i in ids if "test_kernels.py::" in i)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """On the xdist controller: what a worker's case runner knew (package identities, device, heavy cases)."""
    data = getattr(node, "workeroutput", {}).get(WORKER_KEY)
    if data:
        state_of(node.config).merge_worker(data)


def pytest_runtest_logreport(report):
    """Collect verdicts on the process that writes the report (the xdist controller, or the only one)."""
    props = dict(report.user_properties) if report.user_properties else {}
    if VERDICT_KEY not in props or report.when not in ("call", "setup"):
        return
    if report.when == "setup" and not report.skipped:
        return
    config = _CONFIG.get("config")
    if config is None:
        return
    state = state_of(config)
    verdict = json.loads(props[VERDICT_KEY])
    expectation = json.loads(props[EXPECTATION_KEY]) if EXPECTATION_KEY in props else None
    if hasattr(report, "wasxfail"):
        verdict["status"] = "xfailed" if report.skipped else "xpassed"
        if report.skipped:
            verdict["waiver"] = expectation or {"pattern": "--divergences=xfail",
                                                "reason": f"divergence from the contract ({verdict.get('divergence')})"}
    elif report.failed and expectation and "XPASS(strict)" in str(report.longrepr):
        verdict["status"] = "xpassed"
        verdict["detail"] = (f"expectation {expectation['pattern']!r} ({expectation['reason']}) covers this case, "
                             f"which passes: the pattern is too wide")
    elif report.failed:
        verdict["status"] = "failed"
        verdict["detail"] = verdict.get("detail") or str(report.longrepr)[:2000]
    elif report.skipped and verdict.get("status") != "not-applicable":
        verdict["status"] = "skipped"
    state.record(report.nodeid, verdict)
    if REPRO_KEY in props:
        state.repro_entries[report.nodeid] = json.loads(props[REPRO_KEY])
    if state.progress is None and state.expected_ids and progress.wanted(config):
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        state.progress = reporter and progress.ColumnProgress(reporter, state.expected_ids, state.webgpu)
    if state.progress:
        state.progress.step(report.nodeid, verdict)
    xml = config.stash.get(xml_key, None)
    if xml is not None:  # JUnit classname "<package>.<dtype>": dashboards group by package, then dtype
        xml.node_reporter(report).add_attribute("classname", f"{verdict['package']}.{verdict['dtype']}")
    pid, compiled = json.loads(props.get("conformance_compilations", "[null, 0]"))
    if pid is not None:
        state.compilations[pid] = max(state.compilations.get(pid, 0), compiled)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(_STATE, None)
    if state is None or not (state.verdicts or state.results):
        return
    tr = _Quoted(terminalreporter)
    tr.section("conformance")
    for slug, col in sorted(state.columns.items()):
        dev, mine = col.get("device") or {}, [v for v in state.verdicts if v.get("column", "") == slug]
        name = f"column {slug}: " if len(state.columns) > 1 else ""
        if dev.get("adapter"):
            tr.write_line(f"{name}device: {report.device_line(dev)}")
        if col.get("error"):
            tr.write_line(f"{name}ERROR: {col['error']}")
        if len(state.columns) > 1:
            counts = Counter(v["status"] for v in mine)
            tr.write_line("  cases: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for note in state.column_notes:
        tr.write_line(f"left out: {note}")
    for source in state.case_sources:
        tr.write_line(f"cases of {source}")
    counts = Counter(v["status"] for v in state.verdicts)
    tr.write_line("cases: " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none ran"))
    skipped = Counter(v["detail"] for v in state.verdicts if v["status"] == "skipped")
    for reason, n in skipped.items():
        tr.write_line(f"skipped {n}: {reason}")
    for change, n in report.replanned(state.verdicts).items():
        tr.write_line(f"planned for this device {n}: {change}")
    if state.impl_name != "manifest":
        tr.write_line(f"implementation: {state.impl_name}")
        for check, totals in report.check_totals(state.verdicts).items():
            tr.write_line(f"  {check}: " + ", ".join(f"{n} {s}" for s, n in totals.items() if n))
        for kind, cases in report.divergences(state.verdicts).items():
            tr.write_line(f"  divergence {kind}: {len(cases)} case(s)")
    heavy = state.deselected_heavy or (0 if config.getoption("run_heavy") else state.heavy_total)
    if heavy:
        tr.write_line(f"heavy cases deselected: {heavy} (run them with --run-heavy)")
    if state.compilations:
        tr.write_line(f"shader compilations: {sum(state.compilations.values())} "
                      f"(over {len(state.compilations)} process(es))")
    for line in evidence.flag_lines(state.weak, []):    # once, whatever the columns
        tr.write_line(f"weak: {line}")
    for data in state.results:
        name = f"column {data['column']}: " if len(state.results) > 1 else ""
        tr.write_line(f"{name}result: {report.RESULTS[data['result']]}")
        if state.fatal:
            tr.write_line(f"  ERROR: {state.fatal}")
        elif data["result"] == "nothing-checked" and not data["cases"]:
            tr.write_line("  no conformance case was selected (-k, -m, --deselect or the heavy filter left none)")
        for entry in data["unchecked"]:
            tr.write_line(f"  not checked: {report.cell_line(entry)}")
        for line in evidence.flag_lines([], data["compared_nothing"]):
            tr.write_line(f"  {line}")
    if state.repro_index is not None:
        tr.write_line(repro_index.summary_line(state.repro_index))
    path = config.getoption("conformance_report")
    if path:
        tr.write_line(f"report: {path}, {Path(path).with_suffix('.md')} and {Path(path).with_suffix('.html')}")


def test_id_of(nodeid: str) -> str:
    """The parameter id of a node id: ``...::test_case[<id>]``, to which ``--dist loadgroup`` appends
    ``@<group>`` (the id itself may hold brackets and "@")."""
    if "[" not in nodeid or "]" not in nodeid:
        return nodeid
    return nodeid[nodeid.index("[") + 1:nodeid.rindex("]")]


def split_column(test_id: str) -> tuple[str, str]:
    """(case id, column slug or "") of a test id: a case id may hold several "+" (``X[4]+bias[4]``, ``~eps=1e+20``),
    a column's slug (``<webgpu>-<backend>[-<adapter>]``) none, so the column is what follows the last "+", if that
    is a slug."""
    head, plus, tail = test_id.rpartition("+")
    slug = rf"({'|'.join(map(re.escape, WEBGPU))})-[a-z0-9]+(-[^+\s]+)?"
    return (head, tail) if plus and re.fullmatch(slug, tail) else (test_id, "")


class _Quoted:
    """The terminal reporter, writing every line with control characters shown, never sent (ANSI escapes in a
    reason that came from a package or a driver)."""

    def __init__(self, tr):
        self.tr = tr

    def section(self, title: str) -> None:
        self.tr.section(title)

    def write_line(self, line: str) -> None:
        self.tr.write_line(quote.control_free(line))


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    path = config.getoption("conformance_report", None)
    state = config.stash.get(_STATE, None)
    if state is None or hasattr(config, "workerinput"):
        return
    if any(col.get("error") for col in state.columns.values()) and session.exitstatus == 0:
        session.exitstatus = 1  # a column that cannot certify anything is not a pass
    if state.repro_dir:
        try:
            state.repro_index = repro_index.finalize(Path(state.repro_dir), list(state.repro_entries.values()))
        except ConformanceError as err:
            sys.stderr.write(f"conformance: --repro-dir {state.repro_dir}: {err}\n")
            session.exitstatus = session.exitstatus or 1
    if not path:
        if state.collected and not config.option.collectonly:
            state.results = state.reports(list(state.verdicts), 0)   # for the terminal summary's result lines
            _exit_follows(session, state.results, failing=("nothing-checked",))
        return
    # a collection error (state.fatal) stops the run as pytest's "interrupted", but nothing was cut short
    interrupted = state.interrupted or (exitstatus == pytest.ExitCode.INTERRUPTED and not state.fatal)
    verdicts = list(state.verdicts)
    why = "the run was interrupted before it" if interrupted else "no result (the worker running it died)"
    # pytest refusing the options (newer pytest: an unknown marker in -m) selects no case to run: none is missing
    refused = exitstatus == pytest.ExitCode.USAGE_ERROR
    for nodeid in () if refused else sorted(state.expected_ids):
        case_id, slug = split_column(test_id_of(nodeid))
        if nodeid not in state.ran:
            verdicts.append({"id": case_id, "package": case_id.split("/")[0], "variant": "?", "dtype": "?",
                             "family": "?", "status": "not-run", "worst_ratio": None, **({"column": slug} if slug else {}),
                             "detail": why})
    heavy = state.deselected_heavy or (0 if config.getoption("run_heavy") else state.heavy_total)
    reports = state.results = state.reports(verdicts, heavy, interrupted)
    if len(reports) == 1:
        data = reports[0]
        report.write(data, Path(path))
    else:
        grid = matrix.merge([(Path(path), r) for r in reports])
        data = {"columns": reports, "matrix": grid, "interrupted": interrupted,
                "conforms": all(r["conforms"] for r in reports)}
        failures = []
        for r in reports:
            text = report.markdown(r)
            if "## Failures" in text:
                failures.append(f"\n## Failures, {r['column']}" + text.split("## Failures", 1)[1])
        report.write_files(Path(path), data, matrix.markdown(grid) + "".join(failures),
                           report_html.page(reports, grid, title="Conformance matrix"))
    _exit_follows(session, reports, failing=("nothing-checked", "does-not-conform"))


def _exit_follows(session, reports: list[dict], failing: tuple[str, ...]) -> None:
    """The exit status follows the result: a column that checked nothing (skipped, deselected, not runnable here,
    no case at all) fails every run; one that does not conform fails a run that writes its report (certify's).
    Without a report, a run whose every failure is a known one (``--expectations``) passes when it checked
    something, as a known-findings run must. pytest's own non-zero status (failures, no test collected) stands."""
    if session.exitstatus == 0 and any(r["result"] in failing for r in reports):
        session.exitstatus = 1
