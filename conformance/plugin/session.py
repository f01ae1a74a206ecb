"""The case runner of a pytest run: the packages under ``--specs``, their cases, the implementation and its checker.

Loaded by ``conformance/test_kernels.py`` (so only by runs that collect the conformance tests); the plugin's
hooks in :mod:`conformance.plugin` see only the plain data it leaves on the run's state.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import cases as case_generator
from conformance.certify.checker import Checker
from conformance.certify.implementations import load_implementation
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, CaseSkipped, verdict_for
from conformance.certify.testjson import load_test_cases
from conformance.engine.manifest import load_manifest
from conformance.engine.package import REPO_SPECS, Package, find_package_dirs, manifest_path
from conformance.errors import ConformanceError
from conformance.plugin import VERDICT_KEY, WORKER_KEY, state_of


class LoadFailure:
    """Stands in for the cases of a package whose manifest could not be loaded."""

    def __init__(self, directory: Path, message: str):
        self.directory, self.message = directory, message


class CaseRunner:
    """Per process: packages and their cases, the implementation under test and its checker (made on first use)."""

    def __init__(self, config):
        self.config = config
        self.state = state_of(config)
        specs = config.getoption("specs")
        self.specs = Path(specs).resolve() if specs else REPO_SPECS
        self._packages = None
        self._checker = None

    def packages(self):
        """[(directory, Package or error message, cases)] for every package under --specs."""
        if self._packages is None:
            found = find_package_dirs(self.specs)
            if not found:
                raise pytest.UsageError(f"--specs {self.specs}: no kernel package found (a directory with "
                                        f"manifest.json, or build/webgpu/manifest.json, or such directories)")
            self._packages = []
            for directory in found:
                try:
                    path = manifest_path(directory)
                    package = Package(path.parent, load_manifest(path))
                    generated = case_generator.generate(package) + load_test_cases(package)
                    self._packages.append((directory, package, generated))
                except ConformanceError as err:
                    self._packages.append((directory, str(err), []))
            self.state.identity = [pkg.identity for _, pkg, _ in self._packages if not isinstance(pkg, str)]
            self.state.heavy_total = sum(1 for _, _, generated in self._packages for c in generated if c.heavy)
        return self._packages

    @property
    def checker(self) -> Checker:
        if self._checker is None:
            try:
                impl = load_implementation(self.state.impl_name, device=self.state.backend,
                                           adapter=self.state.adapter)
            except ConformanceError as err:
                raise pytest.UsageError(f"--impl {self.state.impl_name}: {err}") from None
            self._checker = Checker(impl)
        return self._checker

    def describe_device(self) -> dict | None:
        """The device (or implementation) the cases ran on, for the report; opens nothing."""
        impl = self.checker.impl
        if hasattr(impl, "describe"):
            return impl.describe()
        # outside the device model: no adapter of ours; what it runs on is its own (a provider, where it says)
        return {"implementation": impl.name, "provider": getattr(impl, "provider", None),
                "available": impl.available()}

    # -- pytest ---------------------------------------------------------------------------------
    def parametrize(self, metafunc) -> None:
        params = []
        for directory, package, generated in self.packages():
            if isinstance(package, str):
                params.append(pytest.param(LoadFailure(directory, package), id=f"{directory.name}/manifest",
                                           marks=_marks(self.config, ["load_error"])))
                continue
            for case in generated:
                names = list(case.markers) + (["heavy"] if case.heavy else [])
                params.append(pytest.param((package, case), id=case.id, marks=_marks(self.config, names)))
        metafunc.parametrize("conformance_case", params)

    def run_case(self, request, conformance_case) -> None:
        """The body of every conformance test."""
        if isinstance(conformance_case, LoadFailure):
            pytest.fail(f"cannot load the package in {conformance_case.directory}:\n{conformance_case.message}",
                        pytrace=False)
        package, case = conformance_case
        verdict = verdict_for(case)
        props = request.node.user_properties
        rerun = f"\n\nrerun: {self.state.rerun_command(request.node)}"
        try:
            self.checker.check(case, package, verdict)
        except CaseFailed as err:
            verdict.status, verdict.detail = "failed", str(err)
            verdict.divergence = err.divergence
            if verdict.divergence and request.config.getoption("divergences") == "xfail":
                verdict.status = "xfailed"
                props.append((VERDICT_KEY, _json(verdict)))
                pytest.xfail(f"divergence from the contract ({verdict.divergence}): {err}")
            props.append((VERDICT_KEY, _json(verdict)))
            # the suite's message, not a traceback of the case runner (terminal and JUnit <failure> alike)
            raise pytest.fail.Exception(f"{err}{rerun}", pytrace=False) from None
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
            raise pytest.fail.Exception(f"{case.id}: {verdict.detail}{rerun}", pytrace=False) from None
        except Exception as err:  # a bug of the suite: still recorded as this case's failure, with its traceback
            verdict.status, verdict.detail = "failed", f"unexpected {type(err).__name__}: {err}"
            props.append((VERDICT_KEY, _json(verdict)))
            raise
        finally:
            if hasattr(self.checker.impl, "compilations"):
                props.append(("conformance_compilations",
                              json.dumps([os.getpid(), self.checker.impl.compilations()])))
        props.append((VERDICT_KEY, _json(verdict)))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        """Before the plugin writes the report: the device, on this process or (xdist) sent to the controller."""
        if self._checker is not None:
            self.state.device = self.describe_device()
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_KEY] = {"identity": self.state.identity, "device": self.state.device,
                                        "heavy_total": self.state.heavy_total}


_RUNNER = pytest.StashKey[CaseRunner]()


def runner_of(config) -> CaseRunner:
    if _RUNNER not in config.stash:
        runner = config.stash[_RUNNER] = CaseRunner(config)
        config.pluginmanager.register(runner, "conformance-case-runner")
    return config.stash[_RUNNER]


def _json(verdict) -> str:
    """A verdict as a user property: JSON text, which JUnit XML carries as it is (a dict would be its repr)."""
    return json.dumps(verdict.as_dict())


def marker_name(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"


def _marks(config, names) -> list:
    marks = []
    for name in dict.fromkeys(marker_name(n) for n in names):
        config.addinivalue_line("markers", f"{name}: conformance case marker")
        marks.append(getattr(pytest.mark, name))
    return marks
