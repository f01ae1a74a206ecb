"""Running the suite against each mutant: in worker processes (the plugin's Checker), or one pytest each."""

from __future__ import annotations

import concurrent.futures as futures
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conformance.certify.checker import Checker
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import CaseSkipped, verdict_for
from conformance.certify.testjson import build_test, load_test_cases
from conformance.config import default_backend
from conformance.engine.package import load_package
from conformance.errors import ConformanceError
from conformance.files import copy_package
from conformance.progress import Progress
from conformance.shader.stress import DEFAULT_RUNS
from conformance.tools.mutate.equivalence import argue
from conformance.tools.mutate.mutants import Mutant, mark_unrendered, package_mutants
from conformance.tools.mutate.report import summarize, write

REPO = Path(__file__).resolve().parents[3]
#: Mutant kinds run under --stress (conformance.shader.stress).
STRESSED_KINDS = ("race", "barrier")
TEST_KERNELS = REPO / "conformance" / "test_kernels.py"


def mutation_device() -> str:
    """The backend the mutants run on: ``CONFORMANCE_DEVICE`` (``mutate --device`` sets it for the workers), else
    Vulkan."""
    backend = default_backend()[0]
    return "vulkan" if backend == "auto" else backend


# -- one pytest process per mutant ------------------------------------------------------------------
def run_suite(
    specs: Path, report: Path, *, stop_first: bool = True, timeout: float = 600, extra: list[str] | None = None
) -> tuple[int, dict | None, str]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(TEST_KERNELS),
        f"--specs={specs}",
        f"--device={mutation_device()}",
        f"--webgpu={default_backend()[2]}",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--conformance-report={report}",
        *(["-x"] if stop_first else []),
        *(extra or []),
    ]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return -1, None, f"timed out after {timeout:.0f} s"
    data = json.loads(report.read_text()) if report.is_file() else None
    return proc.returncode, data, (proc.stdout + proc.stderr)[-3000:]


def stress_runs(m: Mutant) -> int:
    """Races (a missing barrier) are run under ``--stress``: on a device whose schedule hides them, only delays
    that move invocations out of step show them."""
    return DEFAULT_RUNS if m.kind in STRESSED_KINDS else 0


def run_mutant(m: Mutant, package_dir: Path, test_json: Path, scratch: Path, timeout: float) -> Mutant:
    work = scratch / package_dir.name / m.slug  # per package: the versions of an op share mutant ids
    pkg = m.materialize(package_dir, work / package_dir.name)
    shutil.copy(test_json, pkg / "test.json")
    start = time.monotonic()
    stress = [f"--stress={stress_runs(m)}"] if stress_runs(m) else []
    rc, data, tail = run_suite(pkg, work / "report.json", timeout=timeout, extra=["-m", "test_json", *stress])
    m.seconds = round(time.monotonic() - start, 2)
    if rc == 0:
        m.status = "survived"
    elif data is not None:
        failed = [c for c in data["cases"] if c["status"] in ("failed", "xpassed")]
        if failed:
            m.status, m.killed_by = "killed", failed[0]["id"]
            m.detail = " ".join((failed[0].get("detail") or "").split())[:400]
        else:
            m.status, m.killed_by, m.detail = "killed", "(the run failed)", tail[-400:]
    elif rc == -1:
        m.status, m.killed_by, m.detail = "killed", "(timeout)", tail
    else:
        m.status, m.killed_by, m.detail = "killed", "(the run failed without a report)", tail[-400:]
        if "manifest" in tail and "cannot load" in tail:
            m.killed_by = f"{package_dir.name}/manifest"
    shutil.rmtree(work, ignore_errors=True)
    return m


# -- in-process runs: the plugin's own Checker over the stored cases, one device per worker process ---------
_WORKER: dict = {}


def _worker_check(
    mid: str, mutant_dir: str, original_dir: str, test_json: str, stress: int = 0
) -> tuple[str, str, str | None, str, float]:
    """(id, status, killing case, detail, seconds): the stored cases in order, stopping at the first failure;
    each accepted case ``stress`` times under --stress where that is not 0."""
    start = time.monotonic()
    impl = ManifestImplementation(device=mutation_device(), webgpu=default_backend()[2])  # CONFORMANCE_WEBGPU
    checker = Checker(impl, stress_runs=stress)  # per mutant: nothing of one mutant's package is kept for the next
    key = (original_dir, test_json)
    if key not in _WORKER:
        original = load_package(Path(original_dir))
        _WORKER[key] = load_test_cases(original, Path(test_json))
    try:
        package = load_package(Path(mutant_dir))
    except ConformanceError as err:
        return (
            mid,
            "killed",
            f"{Path(original_dir).name}/manifest",
            " ".join(str(err).split())[:400],
            time.monotonic() - start,
        )
    try:
        for case in _WORKER[key]:
            try:
                checker.check(case, package, verdict_for(case))
            except CaseSkipped:
                continue
            except AssertionError as err:
                return mid, "killed", case.id, " ".join(str(err).split())[:400], time.monotonic() - start
            except Exception as err:  # the plugin reports any other error of a case as its failure
                return (
                    mid,
                    "killed",
                    case.id,
                    f"{type(err).__name__}: " + " ".join(str(err).split())[:400],
                    time.monotonic() - start,
                )
        return mid, "survived", None, "", time.monotonic() - start
    finally:
        impl.device.clear_pipelines()


def _progress(progress: Progress, m: Mutant) -> str:
    """One line per mutant (what happened to it), with done / total, survivors so far and the time left."""
    progress.step(m.id, failed=m.status == "survived")
    return (
        f"[{progress.line()}] {m.status:8} {m.package} {m.id}"
        + (f"  <- {m.killed_by}" if m.killed_by else "")
        + f" ({m.seconds:.1f}s)"
    )


def mutate_packages(
    package_dirs: list[Path],
    *,
    jobs: int = 2,
    only: str | None = None,
    out: Path | None = None,
    timeout: float = 300,
    limit: int | None = None,
    log=None,
    via_pytest: bool = False,
    arguments: dict[tuple[str, str], str] | None = None,
) -> dict:
    log = log or (lambda text: print(text, flush=True))
    scratch = Path(tempfile.mkdtemp(prefix="conformance-mutate-"))
    started = time.monotonic()
    all_mutants: list[Mutant] = []
    baselines = {}
    tasks = []
    for directory in package_dirs:
        package = load_package(directory)
        root = package.root
        short = package.manifest.name  # the op's name: what the equivalence arguments are keyed by
        test_json = scratch / f"{package.name}.test.json"  # one per package: versions of an op share its name
        # every non-heavy case of the original package, with its expected outcome and outputs
        test_json.write_text(json.dumps(build_test(package, max_elements=1 << 20)))
        mutants = package_mutants(package)
        if only:
            mutants = [m for m in mutants if re.search(only, m.id)]
        if limit:
            mutants = mutants[:limit]
        mark_unrendered(root, mutants)
        argue(short, mutants, arguments)
        # the unmutated package must pass, or no kill means anything
        base = scratch / f"baseline-{package.name}"
        copy_package(root, base / root.name)
        shutil.copy(test_json, base / root.name / "test.json")
        rc, data, tail = run_suite(base / root.name, base / "report.json", timeout=timeout, stop_first=False)
        baselines[package.name] = {
            "passed": rc == 0,
            "totals": (data or {}).get("totals"),
            "test_json_cases": sum(1 for c in (data or {}).get("cases", []) if c["id"].startswith("test.json/")),
        }
        if rc != 0:
            raise SystemExit(f"the unmutated package {root} fails the suite; fix it first:\n{tail}")
        log(
            f"{package.name}: {len(mutants)} mutants "
            f"({sum(m.status == 'equivalent' for m in mutants)} equivalent), baseline passes"
        )
        all_mutants += mutants
        tasks += [(m, root, test_json) for m in mutants if m.status == "pending"]
    progress = Progress("mutants", len(tasks), echo=False)  # the log prints its lines
    if via_pytest:
        with futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            pending = {pool.submit(run_mutant, m, root, tj, scratch, timeout): m for m, root, tj in tasks}
            for fut in futures.as_completed(pending):
                log(_progress(progress, fut.result()))
    else:
        by_key, jobs_args = {}, []
        for m, root, tj in tasks:  # keyed by package too: the versions of an op share a template's mutant ids
            mdir = m.materialize(root, scratch / "mutants" / m.slug / root.name)
            key = f"{root.name}/{m.id}"
            by_key[key] = m
            jobs_args.append((key, str(mdir), str(root), str(tj), stress_runs(m)))
        ctx = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            pending = [pool.submit(_worker_check, *a) for a in jobs_args]
            for fut in futures.as_completed(pending):
                key, status, killer, detail, seconds = fut.result()
                m = by_key[key]
                m.status, m.killed_by, m.detail, m.seconds = status, killer, detail, round(seconds, 2)
                log(_progress(progress, m))
    shutil.rmtree(scratch, ignore_errors=True)
    result = summarize(all_mutants, baselines, time.monotonic() - started, jobs)
    if out:
        write(result, out)
    return result
