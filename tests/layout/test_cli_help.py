"""``python -m conformance`` and every subcommand's ``--help`` work without NumPy or a WebGPU implementation;
a command that needs a package that is not installed says in one line what to install.

Each run is a fresh interpreter whose import system refuses the blocked packages, as if they were not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conformance.cli import COMMANDS
from tests.layout.test_imports import ROOT

BLOCKER = """
import runpy, sys
BLOCKED = set(sys.argv[1].split(","))
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NotInstalled())
sys.argv = ["python -m conformance", *sys.argv[2:]]
runpy.run_module("conformance", run_name="__main__", alter_sys=True)
"""


def without(blocked: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER, blocked, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("command", [None, *COMMANDS, "plot"])
def test_help_needs_no_gpu_package_and_no_numpy(command):
    proc = without("wgpu,pydawn,numpy,jinja2,jsonschema", *([command] if command else []), "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m conformance"), proc.stderr[-2000:]


def test_a_command_without_its_gpu_package_says_what_to_install_in_one_line():
    proc = without("wgpu", "lint", "specs", "--device", "vulkan")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "error: lint needs the Python package 'wgpu', which is not installed: pip install 'wgpu==0.32.0'"
    ]


def test_without_dawn_the_dawn_device_says_what_to_install():
    """Opening a device names the missing implementation itself (lint reports it as its device finding)."""
    proc = without("pydawn", "lint", "specs/com.microsoft.Gelu", "--device", "vulkan", "--webgpu", "dawn")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert (
        proc.stdout.startswith("<device>:/: --webgpu=dawn is not installed here")
        and "; pip install dawn-python" in proc.stdout
    ), proc.stdout
