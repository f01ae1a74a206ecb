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

import os
import shlex
import signal
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from conformance.certify import report
from conformance.config import BACKENDS
from conformance.errors import ConformanceError
from conformance.plugin import expectations

VERDICT_KEY = "conformance"
#: What a worker sends the controller at its end (xdist's workeroutput): identity, device, heavy count.
WORKER_KEY = "conformance"


def pytest_addoption(parser):
    group = parser.getgroup("conformance", "WebGPU kernel conformance")
    group.addoption("--device", choices=sorted(BACKENDS), default="auto",
                    help="WebGPU backend to certify on (default: auto, preferring a GPU over a CPU adapter)")
    group.addoption("--adapter", default=None, metavar="SUBSTRING",
                    help="use the adapter whose name contains SUBSTRING (case-insensitive)")
    group.addoption("--specs", default=None, metavar="DIR",
                    help="kernel packages to certify: a directory of packages or one package directory "
                         "(default: the repository's specs/)")
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
    group.addoption("--expectations", default=None, metavar="FILE",
                    help="YAML list of {id: pattern, reason: text}: known failures, run as strict xfails "
                         "(in a pattern * and ? are wildcards, all else is literal)")


class RunState:
    """Plain data of one pytest run: options, verdicts, what should run, and what the case runner reports."""

    def __init__(self, config):
        self.config = config
        self.backend = config.getoption("device")
        self.adapter = config.getoption("adapter")
        self.impl_name = config.getoption("impl") or "manifest"
        self.verdicts: list[dict] = []
        self.expected_ids: set[str] = set()
        self.compilations: dict[int, int] = {}
        self.deselected_heavy = 0
        #: Filled by the case runner (or the workers' runners): package identities, device, heavy cases in total.
        self.identity: list[dict] = []
        self.device: dict | None = None
        self.heavy_total = 0
        self.interrupted = False
        self.previous_sigint = None

    def rerun_command(self, nodeid: str) -> str:
        parts = ["pytest", nodeid, f"--device={self.backend}"]
        if self.adapter:
            parts.append(f"--adapter={self.adapter}")
        if self.config.getoption("specs"):
            parts.append(f"--specs={Path(self.config.getoption('specs')).resolve()}")
        if self.config.getoption("run_heavy"):
            parts.append("--run-heavy")
        if self.impl_name != "manifest":
            parts.append(f"--impl={self.impl_name}")
        return " ".join(shlex.quote(p) for p in parts)

    def merge_worker(self, data: dict) -> None:
        if data.get("identity") and not self.identity:
            self.identity = data["identity"]
        self.device = self.device or data.get("device")
        self.heavy_total = max(self.heavy_total, data.get("heavy_total", 0))


_STATE = pytest.StashKey[RunState]()
_CONFIG: dict = {}


def state_of(config) -> RunState:
    if _STATE not in config.stash:
        config.stash[_STATE] = RunState(config)
    return config.stash[_STATE]


def pytest_configure(config):
    _CONFIG["config"] = config  # pytest_runtest_logreport is given no config; one configured run per process
    state_of(config)
    path = config.getoption("conformance_report", None)
    if path and not hasattr(config, "workerinput"):   # refused now, not after every case has run
        try:
            report.check_paths(Path(path))
        except ConformanceError as err:
            raise pytest.UsageError(f"--conformance-report {path}: {err}") from None
    if not hasattr(config, "workerinput") and threading.current_thread() is threading.main_thread():
        state = state_of(config)
        state.previous_sigint = signal.signal(signal.SIGINT, _on_interrupt(state))


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


def pytest_collection_modifyitems(config, items):
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
        for pattern, reason in known:
            if pattern.fullmatch(callspec.id):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=AssertionError))
                break
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = kept
        state.deselected_heavy = len(heavy)


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
    verdict = dict(props[VERDICT_KEY])
    if hasattr(report, "wasxfail"):
        verdict["status"] = "xfailed" if report.skipped else "xpassed"
    elif report.failed:
        verdict["status"] = "failed"
        verdict["detail"] = verdict.get("detail") or str(report.longrepr)[:2000]
    elif report.skipped and verdict.get("status") != "not-applicable":
        verdict["status"] = "skipped"
    state.verdicts.append(verdict)
    pid, compiled = props.get("conformance_compilations", (None, 0))
    if pid is not None:
        state.compilations[pid] = max(state.compilations.get(pid, 0), compiled)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(_STATE, None)
    if state is None or not state.verdicts:
        return
    tr = terminalreporter
    tr.section("conformance")
    if state.device:
        tr.write_line(f"device: {state.device.get('adapter')} ({state.device.get('type')}, "
                      f"{state.device.get('backend')}, driver {state.device.get('driver')})")
    counts = Counter(v["status"] for v in state.verdicts)
    tr.write_line("cases: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    skipped = Counter(v["detail"] for v in state.verdicts if v["status"] == "skipped")
    for reason, n in skipped.items():
        tr.write_line(f"skipped {n}: {reason}")
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
    path = config.getoption("conformance_report")
    if path:
        tr.write_line(f"report: {path} and {Path(path).with_suffix('.md')}")


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    path = config.getoption("conformance_report", None)
    state = config.stash.get(_STATE, None)
    if not path or state is None or hasattr(config, "workerinput"):
        return
    interrupted = state.interrupted or exitstatus == pytest.ExitCode.INTERRUPTED
    ran = {v["id"] for v in state.verdicts}
    verdicts = list(state.verdicts)
    why = "the run was interrupted before it" if interrupted else "no result (the worker running it died)"
    for nodeid in sorted(state.expected_ids):
        case_id = nodeid.split("[", 1)[1][:-1] if "[" in nodeid else nodeid
        if case_id not in ran:
            verdicts.append({"id": case_id, "package": case_id.split("/")[0], "variant": "?", "dtype": "?",
                             "family": "?", "status": "not-run", "worst_ratio": None, "detail": why})
    skipped = dict(Counter(v["detail"] for v in verdicts if v["status"] == "skipped"))
    heavy = state.deselected_heavy or (0 if config.getoption("run_heavy") else state.heavy_total)
    data = report.build(verdicts, identity=state.identity, device=state.device,
                        implementation="manifest-runtime" if state.impl_name == "manifest" else state.impl_name,
                        skipped_reasons=skipped, deselected_heavy=heavy, interrupted=interrupted)
    report.write(data, Path(path))
    if not data["conforms"] and session.exitstatus == 0:
        session.exitstatus = 1
