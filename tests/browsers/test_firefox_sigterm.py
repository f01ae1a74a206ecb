"""A process whose Firefox runs and that is sent SIGTERM (a CI step cancelled, ``timeout``, scripts/test.sh
stopping a step beside it) stops its Firefox, which runs in a session of its own, then dies of the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.gpu.backends import EXECUTABLES

pytestmark = pytest.mark.skipif(not os.path.exists(EXECUTABLES["firefox"]), reason="needs firefox-esr")

ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import sys, time
from conformance.gpu.backends.firefox import Browser
browser = Browser("about:blank")
print(browser.proc.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_stops_the_firefox_it_started(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    firefox = int(proc.stdout.readline())
    try:
        assert _alive(firefox)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == -signal.SIGTERM  # it still dies of the signal
        for _ in range(300):  # killed, then reaped by init
            if not _alive(firefox):
                break
            time.sleep(0.1)
        assert not _alive(firefox), "Firefox outlived the process that started it"
    finally:
        proc.kill()
        if _alive(firefox):
            os.killpg(firefox, signal.SIGKILL)
