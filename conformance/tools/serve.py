"""Certify on any browser that opens a URL: every page that says hello to the server is a column.

Python plans, renders and generates inputs as for every column; the page runs the commands through its own
``navigator.gpu`` (``conformance.gpu.backends.served``) and Python judges what it sends back with the same
checker, device model (the page's adapter features and limits), guards and timeouts as the other columns. One
thread per column runs its cases in order; a reload of the page (or a crashed tab opened again) resumes with the
next case, the case in flight failing with why. Each column writes its report (``<column>.json``, ``.md`` and
``.html``), which ``python -m conformance merge`` takes.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import cases as case_generator
from cases.golden import CASES_DIR, load_matching_golden
from cases.weakness import report_flags
from conformance.certify import report
from conformance.certify.checker import Checker
from conformance.certify.evidence import left_out_entry
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, CaseSkipped, verdict_for
from conformance.certify.testjson import StoredCase, load_test_cases
from conformance.engine.manifest import load_manifest
from conformance.engine.package import Package, find_package_dirs, manifest_path
from conformance.errors import ConformanceError
from conformance.gpu.backends import PAGE_PREFIX
from conformance.gpu.backends.enable_webgpu import is_no_webgpu, no_webgpu_message
from conformance.gpu.backends.served import PAGES, PageBackend, PageClient, engine_of
from conformance.gpu.device import probe_compute


def load_packages(specs: Path, run_heavy: bool = False, keep=None) -> list[tuple[Package, list, list]]:
    """[(package, the cases a column runs, the heavy cases it leaves out)] under ``specs``: golden cases where they
    match, else generated; heavy ones run only with ``run_heavy`` (else left out, and named in the report); only ids
    for which ``keep(id)`` is true when given. A package that does not load is an error naming it."""
    found = find_package_dirs(specs)
    if not found:
        raise ConformanceError(f"--specs {specs}: no kernel package found")
    out = []
    for directory in found:
        package = Package(manifest_path(directory).parent, load_manifest(manifest_path(directory)))
        loaded, _ = load_matching_golden(CASES_DIR, package)
        generated = (loaded if loaded is not None else case_generator.generate(package)) + load_test_cases(package)
        kept = [c for c in generated if keep is None or keep(c.id)]
        out.append(
            (package, [c for c in kept if run_heavy or not c.heavy], [c for c in kept if c.heavy and not run_heavy])
        )
    return out


def explained(error: str | None, user_agent: str | None) -> str | None:
    """A column's error as the page and the terminal say it: a browser without WebGPU is named as such, with how
    to turn it on there (not left to read as a failure of the kernels)."""
    return no_webgpu_message(error, user_agent) if is_no_webgpu(error) else error


def judge(checker: Checker, case, package: Package) -> dict:
    """One case's verdict (as the report stores it): the checker's, with its exceptions turned into statuses."""
    verdict = verdict_for(case)
    try:
        checker.check(case, package, verdict)
    except CaseFailed as err:
        verdict.status, verdict.detail, verdict.divergence = "failed", str(err), err.divergence
    except CaseSkipped as err:
        verdict.status, verdict.detail = "skipped", str(err)
    except CaseNotApplicable as err:
        verdict.status, verdict.detail = "not-applicable", str(err)
    except ConformanceError as err:
        verdict.status, verdict.detail = "failed", f"{type(err).__name__}: {err}"
    except Exception as err:  # noqa: BLE001 -- a bug of the suite or a page's doing: this case's failure
        verdict.status, verdict.detail = "failed", f"unexpected {type(err).__name__}: {err}"
    return verdict.as_dict()


@dataclass
class ColumnRun:
    """One page's column: its cases run in order, its progress, its report."""

    client: PageClient
    packages: list
    report_dir: Path | None
    reconnect_timeout: float = 600.0
    verdicts: list = field(default_factory=list)
    error: str | None = None
    device: str | None = None  # the adapter, once the page answered
    data: dict | None = None
    report_error: str | None = None  # why the column's report could not be written (its verdict still stands)
    verdict_after: int | None = None  # the page's poll replies sent before its verdict was set
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def total(self) -> int:
        return sum(len(c) for _, c, _ in self.packages)

    @property
    def slug(self) -> str:
        engine = engine_of(self.client.user_agent).split()[0].lower()
        return f"{engine}-{self.client.id}"

    @property
    def failed(self) -> int:
        return sum(1 for v in self.verdicts if v["status"] == "failed")

    def _show(self, verdict: str | None = None) -> None:
        replies = self.client.show(
            {
                "column": self.slug,
                "done": len(self.verdicts),
                "total": self.total,
                "failed": self.failed,
                **({"verdict": verdict} if verdict else {}),
            }
        )
        if verdict:
            self.verdict_after = replies

    @property
    def told(self) -> bool:
        """Whether the page was sent its verdict (a poll reply made after it was set), or is closed."""
        return self.verdict_after is not None and self.client.replies > self.verdict_after or bool(self.client.closed)

    def run(self) -> dict:
        """Run every case on the page, write the report; the report's data. The column always finishes: an
        unexpected error ends it as not conforming, saying why, instead of leaving ``serve`` waiting for it."""
        try:
            return self._run()
        except Exception as err:  # noqa: BLE001 -- a bug of the suite or a page's doing: this column's end, said
            self.error = f"the column stopped: {type(err).__name__}: {err}"
            self.data = {
                "column": self.slug,
                "device": None,
                "result": "does-not-conform",
                "conforms": False,
                "error": self.error,
            }
            self._show(f"{self.data['result']}: {self.error}")  # the page is told too (serve waits for that)
            return self.data
        finally:
            self.done.set()

    def _run(self) -> dict:
        webgpu = PAGE_PREFIX + self.client.id
        PAGES[self.client.id] = backend = PageBackend(self.client, connect_timeout=self.reconnect_timeout)
        impl = ManifestImplementation(device="auto", webgpu=webgpu)
        checker = Checker(impl)
        self._show()
        try:
            self.error = probe_compute(impl.device)  # the device the cases will run on: describe() names it
        except ConformanceError as err:
            self.error = str(err)
        self.error = explained(self.error, self.client.user_agent)
        self.device = report.device_line(impl.describe()) if not self.error else f"cannot certify: {self.error}"
        for package, cases, _ in self.packages:
            for case in cases:
                if not self.error and not self.client.wait_alive(self.reconnect_timeout):
                    # waited for once, not once per case left: the column ends, saying why, and frees its place
                    self.error = f"the page stopped polling (not back within {self.reconnect_timeout:g} s)"
                if self.error:
                    self.verdicts.append({**verdict_for(case).as_dict(), "status": "not-run", "detail": self.error})
                else:
                    self.verdicts.append(judge(checker, case, package))
                self._show()
        left_out = [left_out_entry(verdict_for(c).as_dict()) for _, _, heavy in self.packages for c in heavy]
        self.data = report.build(
            self.verdicts,
            identity=[p.identity for p, _, _ in self.packages],
            device=impl.describe(),
            implementation="manifest-runtime",
            skipped_reasons=dict(Counter(v["detail"] for v in self.verdicts if v["status"] == "skipped")),
            deselected_heavy=len(left_out),
            left_out=left_out,
            weak=[
                w
                for p, found, _ in self.packages
                for w in report_flags(p, [c for c in found if not isinstance(c, StoredCase)])
            ],
        )
        self.data["column"] = self.slug
        self.data["user_agent"] = self.client.user_agent
        if self.error:
            self.data.update(error=self.error, conforms=False, result="does-not-conform")
        self._write_report()
        self._show(f"{self.data['result']} ({self.summary()})" + (f": {self.error}" if self.error else ""))
        backend.close()
        return self.data

    def _write_report(self) -> None:
        """Write the column's report; one that is refused (a link or a special file where it goes) is said, and
        the column still finishes with its verdict."""
        if self.report_dir is None:
            return
        try:
            report.write(self.data, self.report_dir / f"{self.slug}.json")
        except ConformanceError as err:
            self.report_error = str(err)

    def summary(self) -> str:
        counts = Counter(v["status"] for v in self.verdicts)
        return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
