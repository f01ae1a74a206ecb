import shutil
import subprocess
import sys

import pytest

from conformance.engine.package import REPO_SPECS

REPO = REPO_SPECS.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: runs the conformance suite in a subprocess (seconds, not milliseconds)")


@pytest.fixture
def published(tmp_path):
    """``copy(name)``: the package laid out as published, ``<tmp>/<name>/build/webgpu/``."""
    def copy(name):
        dst = tmp_path / "pkgs" / name / "build" / "webgpu"
        shutil.copytree(REPO_SPECS / name, dst)
        return tmp_path / "pkgs"
    return copy


def run_conformance(*args, timeout=300):
    cmd = [sys.executable, "-m", "pytest", str(REPO / "conformance" / "test_kernels.py"), "--device=vulkan", "-q",
           "-p", "no:cacheprovider", *map(str, args)]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
