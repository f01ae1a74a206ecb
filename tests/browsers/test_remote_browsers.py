"""The chromium column through what device farms speak (issue 31): a Playwright server (``--browser-endpoint``),
and a Chrome already running with remote debugging (``--browser-cdp``). Both here on 127.0.0.1: a local Playwright
server from the pinned npm package (``npm ci``) launching Debian's Chromium, and Debian's Chromium itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from conformance.gpu.backends import chromium
from tests.browsers.conftest import ROOT
from tests.hostile.conftest import make_specs, run_conformance  # noqa: F401 (a fixture)
from tests.hostile.test_broken_kernels import GELU

SERVER = ROOT / "node_modules" / ".bin" / "playwright-core"
SELECT = "Gelu/f32"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _verdicts(tmp_path, specs, name, *args, env=None) -> dict:
    path = tmp_path / f"{name}.json"
    proc = run_conformance(
        specs, "-k", SELECT, "--webgpu=chromium", f"--conformance-report={path}", *args, env=env, timeout=600
    )
    assert path.exists(), (proc.stdout + proc.stderr)[-3000:]
    data = json.loads(path.read_text())
    return data, {c["id"]: (c["status"], c["variant"], c.get("replanned")) for c in data["cases"]}


def _wait_for(proc, pattern: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout  # a backstop: the line comes within seconds
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(pattern, line)
        if found:
            return found.group(1)
    raise AssertionError("no endpoint printed:\n" + "".join(lines))


@pytest.fixture
def playwright_server():
    if not SERVER.exists():
        pytest.skip("node_modules/.bin/playwright-core missing: run npm ci (scripts/setup.sh does)")
    port = _free_port()
    proc = subprocess.Popen(
        [str(SERVER), "run-server", "--host", "127.0.0.1", "--port", str(port), "--unsafe"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield _wait_for(proc, r"(ws://\S+)")
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(10)


@pytest.fixture
def chrome_with_debugging():
    profile = tempfile.mkdtemp(prefix="conformance-cdp-")
    proc = subprocess.Popen(
        [
            chromium.CHROMIUM,
            "--headless=new",
            "--no-first-run",
            "--no-sandbox",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            *chromium.FLAGS,
            "about:blank",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield _wait_for(proc, r"DevTools listening on (ws://\S+)")
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.browsers
def test_a_playwright_server_gives_the_local_columns_verdicts(tmp_path, make_specs, playwright_server):
    specs = make_specs(**{GELU: GELU})
    remote, got = _verdicts(
        tmp_path,
        specs,
        "remote",
        f"--browser-endpoint={playwright_server}",
        env={"CONFORMANCE_BROWSER_REMOTE_EXECUTABLE": chromium.CHROMIUM},
    )
    _, local = _verdicts(tmp_path, specs, "local")
    assert got == local and len(got) > 20
    assert "Chromium" in remote["device"]["backend"]


@pytest.mark.browsers
def test_a_chrome_with_remote_debugging_gives_the_local_columns_verdicts(tmp_path, make_specs, chrome_with_debugging):
    specs = make_specs(**{GELU: GELU})
    _, got = _verdicts(tmp_path, specs, "cdp", f"--browser-cdp={chrome_with_debugging}")
    _, local = _verdicts(tmp_path, specs, "local")
    assert got == local and len(got) > 20


def test_a_remote_browser_url_of_the_wrong_kind_is_refused(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    proc = run_conformance(specs, "--webgpu=chromium", "--browser-endpoint=http://127.0.0.1:1/", timeout=120)
    assert (
        proc.returncode == 4
        and "--browser-endpoint 'http://127.0.0.1:1/': expected a URL starting with ws://" in proc.stdout + proc.stderr
    ), (proc.stdout + proc.stderr)[-2000:]
