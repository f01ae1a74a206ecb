"""Work on several packages in worker processes (``cases.workers``): the results of a plain loop, in the packages'
order; a package's error as the loop raises it; no fork beside another thread; a Node engine never shared.

The forking checks run in a fresh interpreter: under pytest-xdist this process runs execnet's thread, and the
workers then (rightly) work in-process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from cases import workers
from conformance.engine.package import REPO_SPECS, load_package
from conformance.errors import ConformanceError

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["com.microsoft.Gelu", "com.microsoft.Gelu@2", "com.microsoft.Softmax"]


def in_fresh_interpreter(body: str) -> dict:
    """Run ``body`` (which sets ``out``) in a new single-threaded Python with the packages loaded as ``packages``;
    ``out`` as JSON."""
    code = (
        textwrap.dedent(f"""
        import json, os
        from cases import generate, workers
        from conformance.engine.package import REPO_SPECS, load_package
        packages = [load_package(REPO_SPECS / name) for name in {NAMES!r}]
    """)
        + textwrap.dedent(body)
        + "\nprint(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CONFORMANCE_JOBS": "2"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_forked_workers_give_the_plain_loops_results_in_order_and_a_packages_own_error():
    out = in_fresh_interpreter("""
        def pid_and_name(package):
            return os.getpid(), package.name

        def fails_for_gelu2(package):
            if package.name.endswith("@2"):
                raise ValueError(f"planted failure in {package.name}")
            return package.name

        ran = workers.map_packages(pid_and_name, packages)
        failed = workers.map_packages(fails_for_gelu2, packages)
        out = {"same": workers.generate_all(packages) == [generate(p) for p in packages],
               "names": [name for _, name in ran], "here": os.getpid() in {pid for pid, _ in ran},
               "failed": [repr(r) if isinstance(r, Exception) else r for r in failed]}
    """)
    assert out == {
        "same": True,
        "names": NAMES,
        "here": False,
        "failed": [NAMES[0], "ValueError('planted failure in com.microsoft.Gelu@2')", NAMES[2]],
    }


def test_a_forked_worker_starts_its_own_node_engine():
    """The parent's engine answers before and after workers that use it: each worker talks to its own Node process
    (sharing the parent's pipes would interleave their requests)."""
    out = in_fresh_interpreter("""
        from conformance.tools.jsjinja import open_engine
        from conformance.tools.portable import JS_BUDGET, WGSL_BYTES
        payload = {"op": "eval", "bytes": WGSL_BYTES, "scopes": [{"n": 3}], "exprs": ["n * 2"], "jobs": [[0, 0]],
                   "budget": JS_BUDGET}
        with open_engine() as engine:
            before = engine.request(payload)
            answers = workers.map_packages(lambda p: (engine.request(payload), engine._proc.pid), packages)
            out = {"before": before, "after": engine.request(payload), "answers": [a for a, _ in answers],
                   "shared": engine._proc.pid in {pid for _, pid in answers}}
    """)
    six = [{"kind": "number", "value": 6}]
    assert out == {"before": six, "after": six, "answers": [six] * 3, "shared": False}


@pytest.fixture(scope="module")
def packages():
    return [load_package(REPO_SPECS / name) for name in NAMES]


def pid_and_name(package):
    return os.getpid(), package.name


def test_no_fork_while_another_thread_runs(packages):
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        results = workers.map_packages(pid_and_name, packages, jobs=2)
    finally:
        stop.set()
        other.join()
    assert results == [(os.getpid(), name) for name in NAMES]


def test_one_job_works_here(packages):
    assert workers.map_packages(pid_and_name, packages, jobs=1) == [(os.getpid(), name) for name in NAMES]


def test_a_bad_jobs_setting_is_named(monkeypatch):
    for bad, words in (
        ("many", "CONFORMANCE_JOBS='many' must be a positive number"),
        ("1.5", "CONFORMANCE_JOBS=1.5 must be a whole number"),
    ):
        monkeypatch.setenv("CONFORMANCE_JOBS", bad)
        with pytest.raises(ConformanceError, match=re.escape(words)):
            workers.default_jobs()
    monkeypatch.setenv("CONFORMANCE_JOBS", "3")
    assert workers.default_jobs() == 3


def test_the_cases_command_says_a_bad_jobs_setting_in_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "cases", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CONFORMANCE_JOBS": "many"},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "error: CONFORMANCE_JOBS='many' must be a positive number" in proc.stderr
