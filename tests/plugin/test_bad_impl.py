"""An --impl that cannot load is one clear error before any case runs, not the same UsageError once per case."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import UNUSED_PLUGINS
from tests.gate.conftest import ROOT


def test_a_bad_impl_is_one_error_at_the_start():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance/",
            "--specs",
            "specs/com.microsoft.Gelu",
            "--impl",
            "no_such_module:Factory",
            "-q",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "1 error during collection" in out and " failed" not in out.splitlines()[-1], out[-2000:]
    assert out.count("--impl no_such_module:Factory: implementation 'no_such_module:Factory'") >= 1
    assert "cannot be loaded: No module named 'no_such_module'" in out
