"""Fixtures shared by every group of the suite's own tests."""

import functools
import shutil

import pytest

from cases.golden import CASES_DIR, golden_path, load_golden
from conformance.engine.package import REPO_SPECS

#: For the pytest runs these tests start in a fresh process (never a user's run): the installed plugins that a
#: conformance run does not use, left out. Hypothesis's imports Hypothesis at every session's end; pytest-benchmark's
#: and platformdirs' fixture plugins cost every start-up (docs/bench/suite-speed.md). ``-p no:NAME`` of a plugin
#: that is not installed does nothing.
UNUSED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:platformdirs")


@functools.cache
def golden_cases(name: str) -> tuple:
    """A shipped package's cases as its golden file holds them: what generating them gives (tests/cases/
    test_golden.py and the `cases --check` gate hold the two equal), read in a fraction of the time. For tests
    of what the cases do, not of how they are generated."""
    return tuple(load_golden(golden_path(CASES_DIR, name)))


@pytest.fixture
def package_copy(tmp_path):
    """A scratch copy of a package in specs/, to change or break on purpose."""

    def copy(name):
        dst = tmp_path / name
        shutil.copytree(REPO_SPECS / name, dst)
        return dst

    return copy
