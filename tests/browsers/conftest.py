"""Browsers opened at a URL the way a person opens one (no driver): the served page does the rest."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conformance.gpu.backends import chromium, firefox

ROOT = Path(__file__).resolve().parents[2]


class Chromium:
    """Debian's Chromium, headless, at ``url``, with its own profile (what a person's Chrome does with WebGPU on)."""

    def __init__(self, url: str):
        self.profile = tempfile.mkdtemp(prefix="conformance-chromium-")
        self.proc = subprocess.Popen(
            [
                chromium.CHROMIUM,
                "--headless=new",
                "--no-first-run",
                "--no-sandbox",
                f"--user-data-dir={self.profile}",
                *chromium.FLAGS,
                url,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def close(self):
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)


BROWSERS = {"chromium": Chromium, "firefox": firefox.Browser}


@pytest.fixture
def open_browser():
    """``open_browser(name, url)``: a browser showing ``url``, closed at the end of the test."""
    opened = []

    def open_(name, url):
        if name == "firefox" and not shutil.which(firefox.FIREFOX):
            pytest.skip("firefox-esr is not installed (scripts/setup.sh installs it)")
        opened.append(BROWSERS[name](url))
        return opened[-1]

    yield open_
    for browser in opened:
        browser.close()


def serve(specs, *args, env=None):
    """``python -m conformance serve`` on ``specs`` in a subprocess, and its URL once it printed it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance", "serve", "--specs", str(specs), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    head = []
    for line in proc.stdout:
        head.append(line)
        found = re.search(r"(http://\S+/)\s*$", line)
        if found:
            return proc, found.group(1), head
    raise AssertionError("serve printed no URL:\n" + "".join(head))
