"""pytest plugin: certify kernel packages on a real WebGPU device.

``pytest conformance/ --device=vulkan`` collects one test per generated case
of every package under ``--specs`` (default: the repository's ``specs/``) and
checks it with :mod:`conformance.checks`.  Registered through the ``pytest11``
entry point ``conformance.plugin``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import Counter
from pathlib import Path

import pytest

from conformance.gpu.device import BACKENDS
from conformance.errors import ConformanceError

VERDICT_KEY = "conformance"


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


class Session:
    """Per-process state: packages, their cases, the device and the checker (created lazily)."""

    def __init__(self, config):
        self.config = config
        self.backend = config.getoption("device")
        self.adapter = config.getoption("adapter")
        specs = config.getoption("specs")
        from conformance.engine.package import REPO_SPECS
        self.specs = Path(specs).resolve() if specs else REPO_SPECS
        self._packages = None
        self._checker = None
        self.verdicts: list[dict] = []
        self.compilations: dict[int, int] = {}
        self.deselected_heavy = 0
        self.expected_ids: set[str] = set()
        self.impl_name = config.getoption("impl") or "manifest"
        self._impl = None

    def packages(self):
        """[(directory, Package or error message, cases)] for every package under --specs."""
        if self._packages is None:
            from conformance.errors import ConformanceError
            from conformance.engine.package import Package, find_package_dirs, manifest_path
            from conformance.engine.manifest import load_manifest
            import cases as case_generator
            found = find_package_dirs(self.specs)
            if not found:
                raise pytest.UsageError(f"--specs {self.specs}: no kernel package found (a directory with "
                                        f"manifest.json, or build/webgpu/manifest.json, or such directories)")
            self._packages = []
            for directory in found:
                try:
                    path = manifest_path(directory)
                    from conformance.tools.export import load_test_cases
                    package = Package(path.parent, load_manifest(path))
                    generated = case_generator.generate(package) + load_test_cases(package)
                    self._packages.append((directory, package, generated))
                except ConformanceError as err:
                    self._packages.append((directory, str(err), []))
        return self._packages

    @property
    def impl(self):
        """The implementation under test (``--impl``)."""
        if self._impl is None:
            from conformance.errors import ConformanceError
            from conformance.certify.implementations import load_implementation
            try:
                self._impl = load_implementation(self.impl_name)
            except ConformanceError as err:
                raise pytest.UsageError(f"--impl {self.impl_name}: {err}") from None
        return self._impl

    @property
    def is_manifest(self) -> bool:
        return self.impl_name == "manifest"

    @property
    def checker(self):
        if self._checker is None:
            from reference import compare, reference_for
            from cases.data import make_inputs
            if self.is_manifest:
                from conformance.certify.checker import CaseChecker
                from conformance.gpu.device import get_device
                self._checker = CaseChecker(get_device(self.backend, self.adapter), make_inputs, reference_for,
                                            compare)
            else:
                from conformance.certify.checker import ImplChecker
                self._checker = ImplChecker(self.impl, make_inputs, reference_for, compare)
        return self._checker

    def rerun_command(self, nodeid: str) -> str:
        parts = ["pytest", nodeid, f"--device={self.backend}"]
        if self.adapter:
            parts.append(f"--adapter={self.adapter}")
        if self.config.getoption("specs"):
            parts.append(f"--specs={self.specs}")
        if self.config.getoption("run_heavy"):
            parts.append("--run-heavy")
        if not self.is_manifest:
            parts.append(f"--impl={self.impl_name}")
        return " ".join(shlex.quote(p) for p in parts)


_SESSION = pytest.StashKey[Session]()


def session_of(config) -> Session:
    if _SESSION not in config.stash:
        config.stash[_SESSION] = Session(config)
    return config.stash[_SESSION]


def marker_name(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"


def _marks(config, names) -> list:
    marks = []
    for name in dict.fromkeys(marker_name(n) for n in names):
        config.addinivalue_line("markers", f"{name}: conformance case marker")
        marks.append(getattr(pytest.mark, name))
    return marks


class LoadFailure:
    """Stands in for the cases of a package whose manifest could not be loaded."""

    def __init__(self, directory: Path, message: str):
        self.directory, self.message = directory, message


def pytest_generate_tests(metafunc):
    if "conformance_case" not in metafunc.fixturenames:
        return
    config = metafunc.config
    state = session_of(config)
    params = []
    for directory, package, generated in state.packages():
        if isinstance(package, str):
            params.append(pytest.param(LoadFailure(directory, package), id=f"{directory.name}/manifest",
                                       marks=_marks(config, ["load_error"])))
            continue
        for case in generated:
            names = list(case.markers) + (["heavy"] if case.heavy else [])
            params.append(pytest.param((package, case), id=case.id, marks=_marks(config, names)))
    metafunc.parametrize("conformance_case", params)


def pytest_collection_modifyitems(config, items):
    state = session_of(config)
    expectations = _load_expectations(config.getoption("expectations"))
    kept, heavy = [], []
    for item in items:
        if not config.getoption("run_heavy") and item.get_closest_marker("heavy"):
            heavy.append(item)
            continue
        kept.append(item)
        callspec = getattr(item, "callspec", None)
        if callspec is None or "conformance_case" not in callspec.params:
            continue
        case_id = callspec.id
        for pattern, reason in expectations:
            if pattern.fullmatch(case_id):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=AssertionError))
                break
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = kept
        state.deselected_heavy = len(heavy)


def pytest_collection_finish(session):
    """What this process will run, after every deselection (-k, -m, heavy): cases without a result are reported."""
    session_of(session.config).expected_ids.update(
        item.nodeid for item in session.items if "conformance_case" in getattr(item, "fixturenames", ()))


def pytest_xdist_node_collection_finished(node, ids):
    """On the xdist controller: remember what the workers will run, to report cases that never ran."""
    config = _CONFIG.get("config")
    if config is not None:
        session_of(config).expected_ids.update(i for i in ids if "test_kernels.py::" in i)


def _load_expectations(path):
    if not path:
        return []
    import yaml
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise pytest.UsageError(f"--expectations {path}: cannot read it: {exc}") from None
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str)
                                             and isinstance(e.get("reason"), str) for e in data):
        raise pytest.UsageError(f"--expectations {path}: expected a YAML list of entries with string fields "
                                f"'id' (a glob over case ids) and 'reason'")
    return [(_id_pattern(e["id"]), e["reason"]) for e in data]


def _id_pattern(glob: str) -> re.Pattern:
    """``*`` and ``?`` are wildcards; everything else (brackets included: ids hold shapes) is literal."""
    return re.compile(re.escape(glob).replace(r"\*", ".*").replace(r"\?", "."))


@pytest.fixture
def conformance_checker(request):
    return session_of(request.config).checker


def run_case(request, conformance_case):
    """The body of every conformance test."""
    from conformance.certify.checker import CaseFailed, CaseNotApplicable, CaseSkipped, verdict_for
    state = session_of(request.config)
    if isinstance(conformance_case, LoadFailure):
        pytest.fail(f"cannot load the package in {conformance_case.directory}:\n{conformance_case.message}",
                    pytrace=False)
    package, case = conformance_case
    verdict = verdict_for(case)
    props = request.node.user_properties
    try:
        state.checker.check(case, package, verdict)
    except CaseFailed as err:
        verdict.status, verdict.detail = "failed", str(err)
        verdict.divergence = getattr(err, "divergence", None)
        if verdict.divergence and request.config.getoption("divergences") == "xfail":
            verdict.status = "xfailed"
            props.append((VERDICT_KEY, verdict.as_dict()))
            pytest.xfail(f"divergence from the contract ({verdict.divergence}): {err}")
        props.append((VERDICT_KEY, verdict.as_dict()))
        raise AssertionError(f"{err}\n\nrerun: {state.rerun_command(request.node.nodeid)}") from None
    except CaseSkipped as err:
        verdict.status, verdict.detail = "skipped", str(err)
        props.append((VERDICT_KEY, verdict.as_dict()))
        pytest.skip(str(err))
    except CaseNotApplicable as err:
        verdict.status, verdict.detail = "not-applicable", str(err)
        props.append((VERDICT_KEY, verdict.as_dict()))
        pytest.skip(f"not applicable: {err}")
    except ConformanceError as err:  # no device, a broken template...: this case fails, with the reason
        verdict.status, verdict.detail = "failed", f"{type(err).__name__}: {err}"
        props.append((VERDICT_KEY, verdict.as_dict()))
        pytest.fail(f"{case.id}: {verdict.detail}\n\nrerun: {state.rerun_command(request.node.nodeid)}",
                    pytrace=False)
    except Exception as err:  # a bug of the suite: still recorded as this case's failure, with its traceback
        verdict.status, verdict.detail = "failed", f"unexpected {type(err).__name__}: {err}"
        props.append((VERDICT_KEY, verdict.as_dict()))
        raise
    finally:
        device = getattr(state._checker, "device", None)
        if device is not None:
            props.append(("conformance_compilations", (os.getpid(), device.compilations)))
    props.append((VERDICT_KEY, verdict.as_dict()))


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
    state = session_of(config)
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


_CONFIG: dict = {}


def pytest_configure(config):
    _CONFIG["config"] = config
    config.addinivalue_line("markers", "heavy: a case with buffers of hundreds of MB (run with --run-heavy)")
    config.addinivalue_line("markers", "load_error: a package whose manifest could not be loaded")


def pytest_report_header(config):
    if not _wants_conformance(config):
        return None
    from conformance.errors import DeviceError
    from conformance.gpu.device import get_device
    state = session_of(config)
    if not state.is_manifest:
        reason = state.impl.available()
        return [f"conformance implementation: {state.impl_name} "
                f"({'available' if reason is None else 'unavailable: ' + reason})", f"conformance specs: {state.specs}"]
    try:
        summary = get_device(state.backend, state.adapter).summary
    except DeviceError as err:
        return [f"conformance device: none ({err})"]
    limits = ", ".join(f"{k}={v}" for k, v in summary["limits"].items())
    return [f"conformance device: {summary['adapter']} ({summary['type']}, {summary['backend']}, "
            f"driver {summary['driver']})",
            f"conformance features: {', '.join(summary['features']) or 'none'}; limits: {limits}",
            f"conformance specs: {state.specs}"]


def _wants_conformance(config) -> bool:
    here = Path(__file__).resolve().parents[1]
    return any(Path(str(a).split("::")[0]).resolve() in (here, here / "test_kernels.py") for a in config.args)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(_SESSION, None)
    if state is None or not state.verdicts:
        return
    if not state.deselected_heavy and not config.getoption("run_heavy") and not hasattr(config, "workerinput"):
        state.deselected_heavy = _heavy_count(state)
    tr = terminalreporter
    tr.section("conformance")
    counts = Counter(v["status"] for v in state.verdicts)
    tr.write_line("cases: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    skipped = Counter(v["detail"] for v in state.verdicts if v["status"] == "skipped")
    for reason, n in skipped.items():
        tr.write_line(f"skipped {n}: {reason}")
    if not state.is_manifest:
        from conformance.certify.findings import check_totals, divergences
        tr.write_line(f"implementation: {state.impl_name}")
        for check, counts in check_totals(state.verdicts).items():
            tr.write_line(f"  {check}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
        for kind, cases in divergences(state.verdicts).items():
            tr.write_line(f"  divergence {kind}: {len(cases)} case(s)")
    if state.deselected_heavy:
        tr.write_line(f"heavy cases deselected: {state.deselected_heavy} (run them with --run-heavy)")
    if state.compilations:
        tr.write_line(f"shader compilations: {sum(state.compilations.values())} "
                      f"(over {len(state.compilations)} process(es))")
    path = config.getoption("conformance_report")
    if path:
        tr.write_line(f"report: {path} and {Path(path).with_suffix('.md')}")


def _heavy_count(state: Session) -> int:
    """Heavy cases among those generated (the xdist controller collects nothing itself)."""
    return sum(1 for _, _, generated in state.packages() for case in generated if case.heavy)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    path = config.getoption("conformance_report", None)
    state = config.stash.get(_SESSION, None)
    if not path or state is None or hasattr(config, "workerinput"):
        return
    from conformance.gpu.device import get_device
    ran = {v["id"] for v in state.verdicts}
    verdicts = list(state.verdicts)
    identity = [pkg.identity for _, pkg, _ in state.packages() if not isinstance(pkg, str)]
    try:
        device = get_device(state.backend, state.adapter).summary if state.is_manifest else None
    except Exception:  # the report still records the cases when the device is gone
        device = None
    for nodeid in sorted(state.expected_ids):
        case_id = nodeid.split("[", 1)[1][:-1] if "[" in nodeid else nodeid
        if case_id not in ran:
            verdicts.append({"id": case_id, "package": case_id.split("/")[0], "variant": "?", "dtype": "?",
                             "family": "?", "status": "not-run", "worst_ratio": None,
                             "detail": "no result (the worker running it died, or the run was interrupted)"})
    skipped = dict(Counter(v["detail"] for v in verdicts if v["status"] == "skipped"))
    from conformance.certify.findings import build_report, write_report
    if not state.is_manifest:
        device = {"adapter": state.impl_name, "backend": getattr(state.impl, "provider", "?"),
                  "driver": "", "available": state.impl.available()}
    data = build_report(verdicts, identity=identity, device=device,
                        implementation="manifest-runtime" if state.is_manifest else state.impl_name,
                        skipped_reasons=skipped, deselected_heavy=state.deselected_heavy)
    write_report(data, Path(path))
    if not data["conforms"] and session.exitstatus == 0:
        session.exitstatus = 1
