"""Work on several packages in worker processes (``cases.workers``): the results of a plain loop, in the packages'
order; a package's error as the loop raises it; no fork beside another thread; a Node engine never shared."""

from __future__ import annotations

import os
import threading

import pytest

from cases import generate, workers
from conformance.engine.package import REPO_SPECS, load_package
from conformance.tools.jsjinja import open_engine
from conformance.tools.portable import JS_BUDGET, WGSL_BYTES

NAMES = ["com.microsoft.Gelu", "com.microsoft.Gelu@2", "com.microsoft.Softmax"]


@pytest.fixture(scope="module")
def packages():
    return [load_package(REPO_SPECS / name) for name in NAMES]


def pid_and_name(package):
    return os.getpid(), package.name


def fails_for_gelu2(package):
    if package.name.endswith("@2"):
        raise ValueError(f"planted failure in {package.name}")
    return package.name


def test_workers_give_the_plain_loops_cases_in_the_packages_order(packages):
    assert workers.generate_all(packages, jobs=2) == [generate(p) for p in packages]


def test_the_work_runs_in_other_processes_and_keeps_the_order(packages):
    results = workers.map_packages(pid_and_name, packages, jobs=2)
    assert [name for _, name in results] == NAMES
    assert os.getpid() not in {pid for pid, _ in results}


def test_a_packages_error_is_the_one_the_plain_loop_raises_and_the_others_keep_their_results(packages):
    results = workers.map_packages(fails_for_gelu2, packages, jobs=2)
    assert results[0] == NAMES[0] and results[2] == NAMES[2]
    assert isinstance(results[1], ValueError) and str(results[1]) == "planted failure in com.microsoft.Gelu@2"


def test_no_fork_while_another_thread_runs(packages):
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        results = workers.map_packages(pid_and_name, packages, jobs=2)
    finally:
        stop.set()
        other.join()
    assert {pid for pid, _ in results} == {os.getpid()}


def test_one_job_works_here(packages):
    assert {pid for pid, _ in workers.map_packages(pid_and_name, packages, jobs=1)} == {os.getpid()}


def test_a_bad_jobs_setting_is_named(monkeypatch):
    monkeypatch.setenv("CONFORMANCE_JOBS", "many")
    with pytest.raises(ValueError, match="CONFORMANCE_JOBS='many': expected a whole number"):
        workers.default_jobs()
    monkeypatch.setenv("CONFORMANCE_JOBS", "3")
    assert workers.default_jobs() == 3


def test_a_forked_worker_starts_its_own_node_engine(packages):
    """The parent's engine answers before and after workers that use it: each worker talks to its own process
    (sharing the parent's pipes would interleave their requests)."""
    payload = {"op": "eval", "bytes": WGSL_BYTES, "scopes": [{"n": 3}], "exprs": ["n * 2"], "jobs": [[0, 0]],
               "budget": JS_BUDGET}
    with open_engine() as engine:
        before = engine.request(payload)

        def ask(package):
            return engine.request(payload), engine._proc.pid

        answers = workers.map_packages(ask, packages, jobs=2)
        assert before == [{"kind": "number", "value": 6}], before
        assert engine.request(payload) == before
        assert all(answer == before for answer, _ in answers), answers
        assert engine._proc.pid not in {pid for _, pid in answers}
