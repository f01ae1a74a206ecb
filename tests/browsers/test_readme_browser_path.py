"""The README's path for certifying your own browsers, run as written (issue 41): its ``serve`` line, Chromium and
Firefox opened at the URL it prints the way a person opens them (no driver), Ctrl-C once both columns are done,
then its ``merge`` line in a shell (``out/*.json`` expanded as a user's shell expands it), in an empty folder.

The one addition to the README's lines is ``--specs`` naming one shipped package (Gelu, both dtypes), so that the
test takes seconds, not the minutes of every shipped case in two browsers. Marked ``browsers`` (``--run-browsers``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from conformance.config import REPO_SPECS
from tests.docs import README_PATH, ROOT

pytestmark = pytest.mark.browsers

GELU = "com.microsoft.Gelu"


def readme_command(name: str) -> str:
    """The README's one ``python -m conformance <name> ...`` command, as written there."""
    found = re.findall(rf"`(python -m conformance {name}\b[^`]*)`", README_PATH.read_text())
    assert len(found) == 1, f"expected one `python -m conformance {name} ...` in the README, found {found}"
    return found[0]


def in_shell(command: str) -> str:
    """The command for ``bash -c``, with ``python`` the interpreter running these tests."""
    assert command.startswith("python ")
    return shlex.quote(sys.executable) + command[len("python") :]


def test_serve_then_merge_as_the_readme_writes_them(tmp_path, open_browser):
    specs = tmp_path / "specs"
    shutil.copytree(REPO_SPECS / GELU, specs / GELU)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    line = f"exec {in_shell(readme_command('serve'))} --specs {shlex.quote(str(specs))}"
    serve = subprocess.Popen(
        ["bash", "-c", line], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(serve.stdout), daemon=True)
    reader.start()
    try:
        url = _printed_url(lines, serve)
        open_browser("chromium", url)
        open_browser("firefox", url)
        out = work / "out"
        deadline = time.monotonic() + 600
        while len(list(out.glob("*.json"))) < 2 and serve.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(list(out.glob("*.json"))) == 2, "".join(lines)[-3000:]
        serve.send_signal(signal.SIGINT)  # the README: serve until Ctrl-C
        serve.wait(60)
    finally:
        serve.kill()
    reader.join(10)
    text = "".join(lines)
    assert "2 column(s) finished" in text and text.count(": conforms: ") == 2, text[-3000:]
    merged = subprocess.run(
        ["bash", "-c", in_shell(readme_command("merge"))],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    table = (work / "matrix.md").read_text()
    page = (work / "matrix.html").read_text()
    for column in ("chrome", "firefox"):
        assert column in table.lower() and column in page.lower(), (column, table[:2000])
    assert GELU in table and "<table" in page


def _printed_url(lines: list[str], proc) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        for line in list(lines):
            found = re.search(r"(http://\S+/\S*)\s*$", line)
            if found:
                return found.group(1)
        time.sleep(0.1)
    raise AssertionError("serve printed no URL:\n" + "".join(lines))
