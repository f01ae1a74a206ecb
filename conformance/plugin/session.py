"""The case runner of a pytest run: the packages under ``--specs``, their cases, the implementation and its checker.

Loaded by ``conformance/test_kernels.py`` (so only by runs that collect the conformance tests); the
hooks of the run's state (:mod:`conformance.plugin.state`) see only the plain data it leaves there.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

import cases as case_generator
from cases.golden import CASES_DIR, golden_path, load_matching_golden, regenerate_command, shown_path
from cases.model import marker_name
from cases.weakness import report_flags
from conformance.certify.checker import Checker
from conformance.certify.implementations import load_implementation
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, CaseSkipped, verdict_for
from conformance.certify.report.quote import control_free
from conformance.certify.report.templates import report_templates
from conformance.certify.repro.collect import ReproCollector
from conformance.certify.testjson import load_test_cases
from conformance.engine.manifest import load_manifest
from conformance.engine.package import REPO_SPECS, Package, duplicate_names, find_package_dirs, manifest_path
from conformance.errors import ConformanceError
from conformance.ops import missing_record_note
from conformance.plugin.columns import Column, column_error, expand
from conformance.plugin.keys import COMPILATIONS_KEY, REPRO_KEY, UNAVAILABLE, VERDICT_KEY, WORKER_KEY
from conformance.plugin.state import state_of


class LoadFailure:
    """Stands in for the cases of a package whose manifest could not be loaded."""

    def __init__(self, directory: Path, message: str):
        self.directory, self.message = directory, message


class CaseRunner:
    """Per process: packages and their cases, the implementation under test and its checker (made on first use)."""

    def __init__(self, config):
        self.config = config
        self.state = state_of(config)
        self.state.collected = True
        specs = config.getoption("specs")
        self.specs = Path(specs).resolve() if specs else REPO_SPECS
        golden = config.getoption("golden")
        self.golden = Path(golden).resolve() if golden else None
        self._packages = None
        self._sources: list[str] = []
        self._weak: list[dict] = []
        self._columns: list | None = None
        self._checkers: dict[str, Checker] = {}
        self._errors: dict[str, str | None] = {}
        self.repro = ReproCollector(Path(self.state.repro_dir)) if self.state.repro_dir else None
        _share_cpu_renderer()

    def packages(self):
        """[(directory, Package or error message, cases)] for every package under --specs."""
        if self._packages is None:
            found = find_package_dirs(self.specs)
            if not found:
                raise pytest.UsageError(
                    f"--specs {self.specs}: no kernel package found (a directory with "
                    f"manifest.json, or build/webgpu/manifest.json, or such directories)"
                )
            self._packages = []
            for directory in found:
                try:
                    path = manifest_path(directory)
                    package = Package(path.parent, load_manifest(path))
                    note = missing_record_note(package.name)
                    if note:  # once per package, up front (not once per case as RecordNotFound)
                        warnings.warn(pytest.PytestWarning(note), stacklevel=1)  # about the package, not a caller
                    golden_or_generated = self._cases(package)
                    self._weak += report_flags(package, golden_or_generated)
                    generated = golden_or_generated + load_test_cases(package)
                    self._packages.append((directory, package, generated))
                except ConformanceError as err:
                    self._packages.append((directory, str(err), []))
                except Exception as err:  # noqa: BLE001 -- any failure of one package is that package's failure
                    self._packages.append((directory, f"{directory}: {type(err).__name__}: {err}", []))
            for name, roots in duplicate_names(p for _, p, _ in self._packages if not isinstance(p, str)).items():
                message = (
                    f"{len(roots)} packages have the op id {name!r} ({', '.join(map(str, roots))}): "
                    f"case ids and reports would mix them; rename or remove all but one"
                )
                self._packages = [
                    (d, message, []) if not isinstance(p, str) and p.name == name else (d, p, g)
                    for d, p, g in self._packages
                ]
            self.state.identity = [pkg.identity for _, pkg, _ in self._packages if not isinstance(pkg, str)]
            if self.config.getoption("conformance_report", None):  # rendering every plan: only for a report
                self._report_templates()
            self.state.weak = list(self._weak)
            self.state.case_sources = list(self._sources)
            self.state.heavy_total = sum(1 for _, _, generated in self._packages for c in generated if c.heavy)
        return self._packages

    def _report_templates(self) -> None:
        """The report's template coverage and its dead-branch flags, from the golden (or generated) cases."""
        try:
            self.state.templates, flags = report_templates(
                [(p, found) for _, p, found in self._packages if not isinstance(p, str)]
            )
        except ConformanceError as err:
            self.state.templates, flags = (
                [],
                [{"package": "", "kind": "not-assessed", "message": f"template coverage not assessed: {err}"}],
            )
        self._weak += flags

    def _cases(self, package: Package) -> list:
        """The package's cases: its golden file's (``<--golden>/<package>.yaml``, default ``cases/``) when the
        digest beside it matches the manifest and the generator. With ``--golden`` a missing or stale file fails
        the package (the run must be what the gate checked); without it the cases are generated here, and said
        (a warning, for the suite's own packages): every xdist worker would otherwise spend seconds regenerating
        the same cases. Which it was is noted for the summary."""
        loaded, why = load_matching_golden(self.golden or CASES_DIR, package)
        if loaded is not None:
            self._sources.append(
                f"{package.name}: {shown_path(golden_path(self.golden or CASES_DIR, package.name))}"
                f" ({len(loaded)} cases, digest matches)"
            )
            return loaded
        command = regenerate_command(package.root.parent, self.golden)
        if self.golden is not None:
            raise ConformanceError(f"--golden {self.golden}: {why}; run `{command}` and commit it")
        own = REPO_SPECS.resolve() in package.root.resolve().parents  # the suite's own packages have golden files
        if own:
            warnings.warn(
                pytest.PytestWarning(f"{package.name}: generating its cases ({why}; `{command}` writes it)"),
                stacklevel=1,
            )
        generated = case_generator.generate(package)
        self._sources.append(
            f"{package.name}: generated here ({len(generated)} cases; {why if own else 'no --golden DIR given'})"
        )
        return generated

    def columns(self) -> list[Column | None]:
        """The columns this run certifies on; [None] for an implementation that opens no device of ours."""
        if self._columns is None:
            state = self.state
            if state.impl_name != "manifest":
                # loaded and asked once, now: an --impl that cannot load or cannot run here is one error up front,
                # not a skip per case (a run that checks nothing must not pass)
                why = self.checker(None).unavailable()
                if why:  # a collection error: said once, without a traceback, on every process (xdist too)
                    state.fatal = UNAVAILABLE.format(name=state.impl_name) + why
                    raise pytest.Collector.CollectError(state.fatal)
                self._columns = [None]
            else:
                found, notes = expand(state.webgpu, state.backend, state.adapter)
                state.column_notes = notes
                if not found:
                    raise pytest.UsageError(
                        f"--device={state.backend} --webgpu={state.webgpu}: no adapter to "
                        f"certify on ({'; '.join(notes) or 'none found'})"
                    )
                self._columns = found
        return self._columns

    def checker(self, column: Column | None) -> Checker:
        key = column.slug if column else ""
        if key not in self._checkers:
            state = self.state
            options = (
                dict(device=column.backend, adapter=column.adapter, webgpu=column.webgpu)
                if column
                else dict(device=state.backend, adapter=state.adapter, webgpu=state.webgpu)
            )
            try:
                impl = load_implementation(state.impl_name, **options)
            except ConformanceError as err:
                raise pytest.UsageError(f"--impl {state.impl_name}: {err}") from None
            except Exception as err:  # noqa: BLE001 -- the factory itself failed: the option's error, said once
                raise pytest.UsageError(
                    f"--impl {state.impl_name}: its factory failed: {type(err).__name__}: {err}"
                ) from None
            self._checkers[key] = Checker(impl, stress_runs=state.stress, repros=bool(state.repro_dir))
        return self._checkers[key]

    def column_error(self, column: Column | None) -> str | None:
        """Checked once per column: a device that cannot be opened or cannot compute is one error, not one a case."""
        if column is None:
            return None
        if column.slug not in self._errors:
            self._errors[column.slug] = column_error(column)
        return self._errors[column.slug]

    def describe(self, column: Column | None) -> dict | None:
        """The device (or implementation) a column ran on, for the report; opens nothing."""
        return self.checker(column).hooks.describe()

    # -- pytest ---------------------------------------------------------------------------------
    def parametrize(self, metafunc) -> None:
        params = []
        for directory, package, generated in self.packages():
            if isinstance(package, str):
                params.append(
                    pytest.param(
                        LoadFailure(directory, package),
                        id=f"{directory.name}/manifest",
                        marks=_marks(self.config, [], ("load_error",)),
                    )
                )
                continue
            for case in generated:
                names = [n for n in case.markers if n != "heavy"]  # heaviness is the case's flag, not a name
                own = ("heavy",) if case.heavy else ()
                for column in self.columns():
                    if len(self.columns()) == 1:
                        params.append(
                            pytest.param((package, case, column), id=case.id, marks=_marks(self.config, names, own))
                        )
                        continue
                    marks = _marks(self.config, names + [column.slug], own) + [pytest.mark.xdist_group(column.slug)]
                    params.append(pytest.param((package, case, column), id=f"{case.id}+{column.slug}", marks=marks))
        metafunc.parametrize("conformance_case", params)

    def run_case(self, request, conformance_case) -> None:
        """The body of every conformance test."""
        if isinstance(conformance_case, LoadFailure):  # the package's one case, failed (never "not run")
            failure = conformance_case
            request.node.user_properties.append(
                (
                    VERDICT_KEY,
                    json.dumps(
                        {
                            "id": request.node.callspec.id,
                            "package": failure.directory.name,
                            "variant": "?",
                            "dtype": "?",
                            "family": "load",
                            "status": "failed",
                            "worst_ratio": None,
                            "detail": f"cannot load the package: {failure.message}",
                        }
                    ),
                )
            )
            pytest.fail(f"cannot load the package in {failure.directory}:\n{failure.message}", pytrace=False)
        package, case, column = conformance_case
        verdict = verdict_for(case)
        if column is not None and len(self.columns()) > 1:
            verdict.column = column.slug
        props = request.node.user_properties
        verdict.rerun = self.state.rerun_command(request.node)
        rerun = f"\n\nrerun: {verdict.rerun}"
        checker = self.checker(column)
        try:
            error = self.column_error(column)
            if error:
                raise CaseSkipped(f"column {column.slug} cannot certify: {error}")
            checker.check(case, package, verdict)
        except CaseFailed as err:
            verdict.status, verdict.detail = "failed", str(err)
            verdict.divergence = err.divergence
            if self.repro is not None:
                entry = (
                    self.repro.add(checker.impl, err.failure)
                    if err.failure is not None
                    else self.repro.add_unreproducible(checker.impl, case.id, package.name, str(err))
                )
                props.append((REPRO_KEY, json.dumps(entry)))
                verdict.repro = entry["repro"]
                rerun += f"\nrepro: {verdict.repro}" if verdict.repro else ""
            if verdict.divergence and request.config.getoption("divergences") == "xfail":
                verdict.status = "xfailed"
                props.append((VERDICT_KEY, _json(verdict)))
                pytest.xfail(f"divergence from the contract ({verdict.divergence}): {err}")
            props.append((VERDICT_KEY, _json(verdict)))
            # the suite's message, not a traceback of the case runner (terminal and JUnit <failure> alike)
            raise pytest.fail.Exception(control_free(f"{err}{rerun}"), pytrace=False) from None
        except CaseSkipped as err:
            verdict.status, verdict.detail = "skipped", str(err)
            props.append((VERDICT_KEY, _json(verdict)))
            pytest.skip(str(err))
        except CaseNotApplicable as err:
            verdict.status, verdict.detail = "not-applicable", str(err)
            props.append((VERDICT_KEY, _json(verdict)))
            pytest.skip(f"not applicable: {err}")
        except ConformanceError as err:  # no device, a broken template...: this case fails, with the reason
            verdict.status, verdict.detail = "failed", f"{type(err).__name__}: {err}"
            props.append((VERDICT_KEY, _json(verdict)))
            raise pytest.fail.Exception(control_free(f"{case.id}: {verdict.detail}{rerun}"), pytrace=False) from None
        except Exception as err:  # a bug of the suite: still recorded as this case's failure, with its traceback
            verdict.status, verdict.detail = "failed", f"unexpected {type(err).__name__}: {err}"
            props.append((VERDICT_KEY, _json(verdict)))
            raise
        finally:
            compilations = checker.hooks.compilations()
            if compilations is not None:
                props.append((COMPILATIONS_KEY, json.dumps([os.getpid(), compilations])))
        props.append((VERDICT_KEY, _json(verdict)))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        """Before the plugin writes the report: the device, on this process or (xdist) sent to the controller."""
        columns = {}
        for column in self._columns or []:
            key = column.slug if column else ""
            if key in self._checkers or key in self._errors:
                columns[key] = {
                    "slug": key,
                    "device": self.describe(column) if key in self._checkers else None,
                    "error": self._errors.get(key),
                }
        self.state.merge_columns(columns)
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_KEY] = {
                "identity": self.state.identity,
                "columns": columns,
                "heavy_total": self.state.heavy_total,
                "left_out": self.state.left_out,
                "case_sources": self.state.case_sources,
                "weak": self.state.weak,
                "templates": self.state.templates,
            }


def _share_cpu_renderer() -> None:
    """In an xdist worker, before any device opens: Mesa's llvmpipe (lavapipe) starts one render thread per core in
    every process, so N workers on N cores ran N x N threads and ``-n 2`` was slower than serial on 2 cores
    (docs/bench/README.md); each worker gets its share of the cores. Only llvmpipe reads LP_NUM_THREADS; a value
    the user set wins."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers > 1 and "LP_NUM_THREADS" not in os.environ:
        os.environ["LP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))


_RUNNER = pytest.StashKey[CaseRunner]()


def runner_of(config) -> CaseRunner:
    if _RUNNER not in config.stash:
        runner = config.stash[_RUNNER] = CaseRunner(config)
        config.pluginmanager.register(runner, "conformance-case-runner")
    return config.stash[_RUNNER]


def _json(verdict) -> str:
    """A verdict as a user property: JSON text, which JUnit XML carries as it is (a dict would be its repr)."""
    return json.dumps(verdict.as_dict())


def _marks(config, names, own: tuple[str, ...] = ()) -> list:
    """pytest marks for a case: ``names`` (from its data) made safe by :func:`marker_name`; ``own`` (the plugin's
    own, such as ``heavy`` or a column's xdist group) as they are."""
    marks = []
    for name in [*dict.fromkeys(marker_name(n) for n in names), *own]:
        config.addinivalue_line("markers", f"{name}: conformance case marker")
        marks.append(getattr(pytest.mark, name))
    return marks
