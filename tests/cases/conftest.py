"""Shared fixtures: the repository's packages, generated once per session."""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cases  # noqa: E402
from conformance.engine.package import find_package_dirs, load_package  # noqa: E402

PACKAGES = [d.name for d in find_package_dirs(ROOT / "specs")]


@pytest.fixture(scope="session", params=PACKAGES)
def package(request):
    return load_package(request.param)


@pytest.fixture(scope="session")
def generated(package):
    return cases.generate(package)


@pytest.fixture(scope="session")
def report(package):
    return cases.coverage(package)
