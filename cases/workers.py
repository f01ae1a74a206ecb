"""Work on several packages at once, one package at a time per worker process, for the commands that go over
every package (``cases``, ``lint``).

The work is pure and per package, so the workers' results are the ones one process would produce, in the order
of the packages. Workers are forked (they start with everything this process has imported, no re-import), and
only while this process runs no other thread: forking a process with threads can copy a lock some other thread
holds. A package whose work raised in a worker is worked on again here, so that the error is the one a plain
loop meets (an exception need not survive pickling).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from typing import Callable

from cases.generate import generate
from conformance.config import env_float
from conformance.errors import ConformanceError

#: The work of the pool being run and its packages: set before the workers fork, so that each inherits them.
_WORK: list = []


def default_jobs() -> int:
    """The cores this process may run on; ``CONFORMANCE_JOBS`` overrides (a bad value: ConformanceError)."""
    wanted = env_float("CONFORMANCE_JOBS", 0, ConformanceError)
    if wanted:
        if not wanted.is_integer():
            raise ConformanceError(f"CONFORMANCE_JOBS={wanted:g} must be a whole number of worker processes")
        return int(wanted)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def map_packages(work: Callable, packages: list, jobs: int | None = None) -> list:
    """``[work(p) for p in packages]`` with each result or the exception ``work(p)`` raised, the packages spread
    over ``jobs`` worker processes (default: :func:`default_jobs`). ``work``'s results must pickle."""
    jobs = min(default_jobs() if jobs is None else jobs, len(packages))
    done: dict[int, object] = {}
    if jobs >= 2 and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        # the largest manifests first, so that the last package to start is a short one
        order = sorted(range(len(packages)), key=lambda i: -_weight(packages[i]))
        _WORK[:] = [work, packages]
        try:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                done = {i: result for i, ok, result in pool.imap_unordered(_in_worker, order) if ok}
        finally:
            _WORK.clear()
    return [done[i] if i in done else _here(work, p) for i, p in enumerate(packages)]


def generate_all(packages: list, jobs: int | None = None) -> list:
    """For each package its cases, or the exception generating them raised."""
    return map_packages(generate, packages, jobs)


def _here(work: Callable, package):
    try:
        return work(package)
    except Exception as exc:  # noqa: BLE001 -- the caller says it with its package
        return exc


def _in_worker(index: int) -> tuple[int, bool, object]:
    work, packages = _WORK
    try:
        return index, True, work(packages[index])
    except Exception:  # noqa: BLE001 -- worked on again in the parent
        return index, False, None


def _weight(package) -> int:
    """How much work ``package`` makes, roughly: its variants times its inputs."""
    manifest = package.manifest
    return len(manifest.variants) * max(1, len(manifest.inputs))
