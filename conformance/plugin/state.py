"""The state of one pytest run, registered as a plugin object: its hooks are its methods.

``pytest_configure`` (:mod:`conformance.plugin`) builds a :class:`RunState` and registers it with
``config.pluginmanager``, so nothing is kept in module globals and each configured run (an in-process pytester run
too) has its own. It holds plain data (options, verdicts, what was expected to run, what the case runner and the
xdist workers told) so that the xdist controller writes the report without loading the engine; the reports are
built by :mod:`conformance.plugin.reporting` and the terminal section written by :mod:`conformance.plugin.summary`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from _pytest.junitxml import xml_key  # the --junitxml writer of this run, to name each case's classname

from conformance.certify import evidence
from conformance.certify.outcomes import verdict_for
from conformance.certify.repro import index as repro_index
from conformance.errors import ConformanceError
from conformance.plugin import expectations, progress, reporting, summary
from conformance.plugin.keys import COMPILATIONS_KEY, EXPECTATION_KEY, REPRO_KEY, UNAVAILABLE, VERDICT_KEY, WORKER_KEY
from conformance.plugin.rerun import RerunCommands


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
            raise pytest.UsageError(
                f"--stress rewrites this project's rendered shaders: it applies to --impl "
                f"manifest only, not {self.impl_name}"
            )
        self.repro_dir = config.getoption("repro_dir", None)
        if self.repro_dir and self.impl_name == "manifest":
            raise pytest.UsageError(
                "--repro-dir: writes repros of an implementation outside this suite (--impl "
                "onnxruntime-cpu, ...); the manifest runtime's failures rerun with their rerun "
                "command"
            )
        #: With --repro-dir: each failing case's repro entry (conformance.certify.repro.collect.ReproCollector.add) by node
        #: id, sent with its test report (so a worker that dies keeps its entries); the index, once written.
        self.repro_entries: dict[str, dict] = {}
        self.repro_index: dict | None = None
        self.reruns = RerunCommands(config)
        self.verdicts: list[dict] = []
        self.ran: dict[str, int] = {}  # node id -> index of its verdict
        self.expected_ids: set[str] = set()
        self.progress = None  # a ColumnProgress once the cases are known, where progress is wanted
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
        self.case_sources: list[str] = []  # per package: the golden file it ran, or why its cases were generated
        self.weak: list[dict] = []  # the generator's weakness flags of the packages ({package, kind, message})
        self.templates: list[dict] = []  # template branch coverage (conformance.certify.report.templates)
        self.interrupted = False
        self.previous_sigint = None
        #: The reports (one per column) once the session has finished: the terminal summary prints their result.
        self.results: list[dict] = []
        #: Whether this run collected the conformance tests (here, or on a worker): only such a run has a result,
        #: even one that selected no case (nothing checked).
        self.collected = False
        #: Why this run cannot certify anything at all (an --impl that is not available here): one error, up front.
        self.fatal: str | None = None

    # --- what the case runner and the workers tell

    def record(self, nodeid: str, verdict: dict) -> None:
        """One verdict per test: a test run again (on a replacement worker) replaces its earlier verdict."""
        index = self.ran.get(nodeid)
        if index is None:
            self.ran[nodeid] = len(self.verdicts)
            self.verdicts.append(verdict)
        else:
            self.verdicts[index] = verdict

    def rerun_command(self, item) -> str:
        """The command that reruns exactly ``item`` (:mod:`conformance.plugin.rerun`)."""
        return self.reruns.command(item)

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

    def heavy_deselected(self) -> int:
        """The heavy cases this run left out: those deselected here, else (on the xdist controller, which
        deselects nothing) every heavy case unless --run-heavy."""
        return self.deselected_heavy or (0 if self.config.getoption("run_heavy") else self.heavy_total)

    # --- Ctrl-C

    def catch_interrupt(self) -> None:
        """Ctrl-C once: stop after the running case (its device work is abandoned, the device released), then write
        the partial report marked interrupted. Twice: exit at once (status 130)."""

        def handler(signum, frame):
            if self.interrupted:
                sys.stderr.write("\nconformance: interrupted again: exiting now, without the report\n")
                sys.stderr.flush()
                os._exit(130)
            self.interrupted = True
            sys.stderr.write(
                "\nconformance: interrupted: stopping and writing the partial report (Ctrl-C again to exit at once)\n"
            )
            raise KeyboardInterrupt

        self.previous_sigint = signal.signal(signal.SIGINT, handler)

    def pytest_unconfigure(self, config):
        if self.previous_sigint is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self.previous_sigint)

    # --- collection

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        """Expectations mark their cases; heavy cases leave the run unless ``--run-heavy``, after ``-k``, ``-m`` and
        ``--deselect`` chose (so that what is left out as heavy is what the user selected, and named as such)."""
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
                    item.add_marker(
                        pytest.mark.xfail(
                            reason=f"{entry.reason} (expectation {entry.glob!r})",
                            strict=True,
                            raises=(AssertionError, pytest.fail.Exception),
                        )
                    )
                    item.user_properties.append((EXPECTATION_KEY, json.dumps(entry.as_dict())))
                    break
        if heavy:
            config.hook.pytest_deselected(items=heavy)
            items[:] = kept
            self.deselected_heavy = len(heavy)
            self.left_out = [_left_out(item) for item in heavy if _case_of(item) is not None]

    def pytest_collectreport(self, report):
        """An --impl that is not available here fails the conformance module's collection (the case runner): the
        run certifies nothing, and that error is its result, said once (here on the xdist controller, which learns
        it only from the workers' collection reports)."""
        if not report.failed:
            return
        text = report.longreprtext.strip()
        if text.startswith(UNAVAILABLE.format(name=self.impl_name)):
            self.collected = True
            self.fatal = self.fatal or text[:2000]

    def pytest_collection_finish(self, session):
        """What this process will run, after every deselection (-k, -m, heavy): cases without a result are
        reported."""
        self.expected_ids.update(
            item.nodeid for item in session.items if "conformance_case" in getattr(item, "fixturenames", ())
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """On the xdist controller: remember what the workers will run, to report cases that never ran."""
        self.expected_ids.update(i for i in ids if "test_kernels.py::" in i)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """On the xdist controller: what a worker's case runner knew (package identities, device, heavy cases)."""
        data = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if data:
            self.merge_worker(data)

    # --- the run

    def pytest_runtest_logreport(self, report):
        """Collect verdicts on the process that writes the report (the xdist controller, or the only one)."""
        props = dict(report.user_properties) if report.user_properties else {}
        if VERDICT_KEY not in props or report.when not in ("call", "setup"):
            return
        if report.when == "setup" and not report.skipped:
            return
        verdict = json.loads(props[VERDICT_KEY])
        expectation = json.loads(props[EXPECTATION_KEY]) if EXPECTATION_KEY in props else None
        if hasattr(report, "wasxfail"):
            verdict["status"] = "xfailed" if report.skipped else "xpassed"
            if report.skipped:
                verdict["waiver"] = expectation or {
                    "pattern": "--divergences=xfail",
                    "reason": f"divergence from the contract ({verdict.get('divergence')})",
                }
        elif report.failed and expectation and "XPASS(strict)" in str(report.longrepr):
            verdict["status"] = "xpassed"
            verdict["detail"] = (
                f"expectation {expectation['pattern']!r} ({expectation['reason']}) covers this "
                f"case, which passes: the pattern is too wide"
            )
        elif report.failed:
            verdict["status"] = "failed"
            verdict["detail"] = verdict.get("detail") or str(report.longrepr)[:2000]
        elif report.skipped and verdict.get("status") != "not-applicable":
            verdict["status"] = "skipped"
        self.record(report.nodeid, verdict)
        if REPRO_KEY in props:
            self.repro_entries[report.nodeid] = json.loads(props[REPRO_KEY])
        self._progress(report.nodeid, verdict)
        xml = self.config.stash.get(xml_key, None)
        if xml is not None:  # JUnit classname "<package>.<dtype>": dashboards group by package, then dtype
            xml.node_reporter(report).add_attribute("classname", f"{verdict['package']}.{verdict['dtype']}")
        pid, compiled = json.loads(props.get(COMPILATIONS_KEY, "[null, 0]"))
        if pid is not None:
            self.compilations[pid] = max(self.compilations.get(pid, 0), compiled)

    def _progress(self, nodeid: str, verdict: dict) -> None:
        if self.progress is None and self.expected_ids and progress.wanted(self.config):
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            self.progress = reporter and progress.ColumnProgress(reporter, self.expected_ids, self.webgpu)
        if self.progress:
            self.progress.step(nodeid, verdict)

    # --- the end: reports, exit status, terminal summary

    def pytest_sessionfinish(self, session, exitstatus):
        config = self.config
        if hasattr(config, "workerinput"):
            return
        if any(col.get("error") for col in self.columns.values()) and session.exitstatus == 0:
            session.exitstatus = 1  # a column that cannot certify anything is not a pass
        if self.repro_dir:
            try:
                self.repro_index = repro_index.finalize(Path(self.repro_dir), list(self.repro_entries.values()))
            except ConformanceError as err:
                sys.stderr.write(f"conformance: --repro-dir {self.repro_dir}: {err}\n")
                session.exitstatus = session.exitstatus or 1
        path = config.getoption("conformance_report", None)
        if not path:
            if self.collected and not config.option.collectonly:
                self.results = reporting.column_reports(self, list(self.verdicts), 0)  # for the summary's results
                _exit_follows(session, self.results, failing=("nothing-checked",))
            return
        # a collection error (self.fatal) stops the run as pytest's "interrupted", but nothing was cut short
        interrupted = self.interrupted or (exitstatus == pytest.ExitCode.INTERRUPTED and not self.fatal)
        why = "the run was interrupted before it" if interrupted else "no result (the worker running it died)"
        # pytest refusing the options (newer pytest: an unknown marker in -m) selects no case to run: none is missing
        refused = exitstatus == pytest.ExitCode.USAGE_ERROR
        verdicts = list(self.verdicts) + ([] if refused else reporting.not_run(self.expected_ids, self.ran, why))
        self.results = reporting.column_reports(self, verdicts, self.heavy_deselected(), interrupted)
        reporting.write(Path(path), self.results, interrupted)
        _exit_follows(session, self.results, failing=("nothing-checked", "does-not-conform"))

    def pytest_terminal_summary(self, terminalreporter):
        summary.write(terminalreporter, self)


#: Where pytest_configure keeps the run's state, for the case runner (:func:`state_of`).
STATE = pytest.StashKey[RunState]()


def state_of(config) -> RunState:
    """The state of the run ``config`` configured."""
    return config.stash[STATE]


def _case_of(item):
    """The (package, case, column) a conformance test runs, or None for any other test or a package's load error."""
    param = getattr(getattr(item, "callspec", None), "params", {}).get("conformance_case")
    return param if isinstance(param, tuple) else None


def _left_out(item) -> dict:
    _, case, column = _case_of(item)
    return evidence.left_out_entry({**verdict_for(case).as_dict(), "column": column.slug if column else None})


def _exit_follows(session, reports: list[dict], failing: tuple[str, ...]) -> None:
    """The exit status follows the result: a column that checked nothing (skipped, deselected, not runnable here,
    no case at all) fails every run; one that does not conform fails a run that writes its report (certify's).
    Without a report, a run whose every failure is a known one (``--expectations``) passes when it checked
    something, as a known-findings run must. pytest's own non-zero status (failures, no test collected) stands."""
    if session.exitstatus == 0 and any(r["result"] in failing for r in reports):
        session.exitstatus = 1
