"""Fixtures shared by every group of the suite's own tests."""

import shutil

import pytest

from conformance.engine.package import REPO_SPECS


@pytest.fixture
def package_copy(tmp_path):
    """A scratch copy of a package in specs/, to change or break on purpose."""
    def copy(name):
        dst = tmp_path / name
        shutil.copytree(REPO_SPECS / name, dst)
        return dst
    return copy
