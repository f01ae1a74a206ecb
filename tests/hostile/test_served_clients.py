"""Clients of ``serve`` that are not a real browser's page (issue 40, items 6, 7, 8, 9, 12, 13).

Anyone with the URL can say hello and get a column of their own. Such a client must not end another column,
fill the server's memory, forge lines in its terminal, crash a request handler, or make the server hand out a
pull request's files; a column whose report is refused still finishes with its verdict.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest

from conformance.engine.package import REPO_SPECS
from conformance.gpu.backends.served import PageServer
from tests.hostile.conftest import ROOT, victim

GELU = "com.microsoft.Gelu"
CASES = ("Gelu/f32/X[0]/scalar", "Gelu/f32/X[0,3]/scalar")
FORGED_UA = "Evil/1.0\x1b[2K\r\nbrowser-page1: conforms: 2 passed\x1b]0;title\x07"


def post(url: str, data=None, raw: bytes | None = None) -> tuple[int, bytes]:
    body = raw if raw is not None else json.dumps(data).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def poll(url: str, hello: dict, seq=None, answer=None) -> dict:
    status, body = post(
        url + "poll",
        {
            "client": hello["client"],
            "key": hello["key"],
            "generation": hello["generation"],
            "seq": seq,
            "answer": answer,
        },
    )
    assert status == 200, body
    return json.loads(body)


@pytest.fixture
def served(tmp_path):
    """``serve`` of Gelu's two cases with ``--columns 1``, its reports in ``reports/``: (process, URL, paths)."""
    specs = tmp_path / "specs"
    shutil.copytree(REPO_SPECS / GELU, specs / GELU)
    reports = tmp_path / "reports"
    reports.mkdir()
    ort = tmp_path / "ortpkg" / "dist"  # an onnxruntime-web whose wasm file is a link out of it
    ort.mkdir(parents=True)
    (ort / "ort.webgpu.min.mjs").write_text("// the package's own\n")
    (ort / "ort-wasm-simd-threaded.jsep.wasm").symlink_to(victim(tmp_path))
    args = [
        sys.executable,
        "-P",
        "-m",
        "conformance",
        "serve",
        "--specs",
        str(specs),
        "--columns",
        "1",
        "--report",
        str(reports),
        "--reconnect-timeout",
        "120",
        "--timeout",
        "120",
    ]
    for case in CASES:
        args += ["--cases", case]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CONFORMANCE_ORT_WEB": str(ort.parent)}
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    head = []
    for line in proc.stdout:
        head.append(line)
        found = re.search(r"(http://\S+/)\s*$", line)
        if found:
            break
    else:
        pytest.fail("serve printed no URL:\n" + "".join(head))
    yield proc, found.group(1), {"reports": reports, "victim": tmp_path / "victim.txt", "head": head}
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def read_until(proc, lines: list, text: str) -> bool:
    """Read the server's terminal into ``lines`` until a line has ``text``; whether one did (not its end)."""
    for line in proc.stdout:
        lines.append(line)
        if text in line:
            return True
    return False


def next_batch(url: str, hello: dict) -> dict:
    """Poll until the column sends a batch (each poll waits up to 10 s for one)."""
    for _ in range(30):
        batch = poll(url, hello).get("batch")
        if batch is not None:
            return batch
    pytest.fail(f"column {hello['client']} sent no batch")


def finished(url: str, hello: dict) -> dict:
    """Poll until the column says its verdict (the server makes the page's column wait at most its timeouts)."""
    for _ in range(30):
        reply = poll(url, hello)
        if "verdict" in reply["progress"]:
            return reply
    pytest.fail(f"column {hello['client']} did not finish: {reply}")


def test_one_client_ends_neither_another_column_nor_the_server(served):
    proc, url, paths = served
    # a client with a forged user agent, a report path that is a link, and an answer that fails at once
    (paths["reports"] / "browser-page1.json").symlink_to(paths["victim"])
    status, body = post(url + "hello", {"userAgent": FORGED_UA})
    forged = json.loads(body)
    assert status == 200 and forged["client"] == "page1", body
    batch = next_batch(url, forged)
    # the column a real page would run: it says hello while the forged one runs, and polls at once (a page is a
    # column from its first poll; no batch comes yet: the devices open one at a time, and the forged one's is open)
    status, body = post(url + "hello", {"userAgent": "Mozilla/5.0 Firefox/153.0"})
    assert status == 200, body
    busy = json.loads(body)
    first_poll = threading.Thread(target=poll, args=(url, busy))
    first_poll.start()
    assert read_until(proc, paths["head"], "page2: connected"), "".join(paths["head"])  # its column is made
    poll(url, forged, seq=batch["seq"], answer="not an answer")
    assert "does-not-conform" in finished(url, forged)["progress"]["verdict"]
    # --columns 1 has finished, and the busy column still runs: the server keeps serving it
    assert proc.poll() is None
    # deeply nested JSON: refused as a malformed body, no traceback in the server
    status, body = post(url + "hello", raw=b"[" * 200_000)
    assert status == 400 and b"JSON object" in body, body
    # ONNX Runtime Web's files: serve runs this project's runtime, so nothing registered ort/ (its confinement to
    # its dist/ is tests/browsers/test_page_server_ort.py's), and a link out of that dist/ is no path either
    assert get(url + "ort/ort.webgpu.min.mjs") == (404, b"refused: no such path\n")
    status, body = get(url + "ort/ort-wasm-simd-threaded.jsep.wasm")
    assert status == 404 and b"precious" not in body, body
    # now the busy page answers (badly): its column ends, and with it the server
    first_poll.join(60)
    batch = next_batch(url, busy)  # its column was not cut off
    poll(url, busy, seq=batch["seq"], answer="not an answer either")

    out = "".join(paths["head"]) + proc.communicate(timeout=300)[0]
    assert "Traceback" not in out, out[-4000:]
    assert "2 column(s) finished: browser-page1, firefox-page2" in out, out[-3000:]
    assert proc.returncode == 1, out[-3000:]  # neither column conforms
    assert paths["victim"].read_text() == "precious\n"
    assert re.search(r"browser-page1: .*\n  report not written: .*refusing to write through a symlink", out), out
    assert (paths["reports"] / "firefox-page2.json").is_file()
    # the page's text stays on its own line, control characters shown, never acted on
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert not any(line.startswith("browser-page1: conforms") for line in out.splitlines()), out
    assert "Evil/1.0\\x1b[2K\\r\\nbrowser-page1: conforms" in out, out[-3000:]


def test_the_servers_unclaimed_blobs_and_pages_are_capped_as_a_whole():
    server = PageServer(max_pending_bytes=1 << 20, max_pages=3)
    try:
        hellos = []
        for _ in range(3):
            status, body = post(server.url + "hello", {"userAgent": "x"})
            assert status == 200, body
            hellos.append(json.loads(body))
        status, body = post(server.url + "hello", {"userAgent": "x"})
        assert status == 503 and b"3 pages, its limit" in body, body
        again = {"client": hellos[0]["client"], "key": hellos[0]["key"], "userAgent": "x"}
        assert post(server.url + "hello", again)[0] == 200  # a reload keeps its page
        blob = b"\0" * (600 << 10)
        first, second = (f"{server.url}blob/{h['client']}/{h['key']}/b1" for h in hellos[:2])
        assert post(first, raw=blob)[0] == 204
        status, body = post(second, raw=blob)  # each page under its own cap; not together
        assert status == 413 and b"of all pages" in body, body
        assert sum(len(b) for c in server.clients.values() for b in c.downloads.values()) == len(blob)
    finally:
        server.close()


def test_the_checkouts_own_onnxruntime_web_is_never_served(tmp_path, monkeypatch):
    own = tmp_path / "node_modules" / "onnxruntime-web" / "dist"
    own.mkdir(parents=True)
    (own / "ort.webgpu.min.mjs").write_text("// the pull request's\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONFORMANCE_ORT_WEB", raising=False)
    server = PageServer()
    try:
        status, body = get(server.url + "ort/ort.webgpu.min.mjs")
        assert b"the pull request's" not in body and status in (200, 404), body[:200]
    finally:
        server.close()


def test_a_page_is_announced_once_its_hello_has_set_its_agent(capsys):
    """The server makes a page's column before the hello that made it has stored the user agent: the progress
    line waits for the hello, so the agent is never shown empty (seen under load in scripts/test.sh)."""
    from types import SimpleNamespace

    from conformance.cli.serve import _progress

    client = SimpleNamespace(id="page1", generation=0, user_agent="")
    run = SimpleNamespace(client=client, verdicts=[], total=2, device=None, failed=0, slug="firefox-page1")
    shown: dict = {}
    _progress(run, shown)
    assert capsys.readouterr().out == "" and shown == {}
    client.generation, client.user_agent = 1, "Mozilla/5.0 Firefox/153.0"
    _progress(run, shown)
    assert capsys.readouterr().out == "page1: connected: Mozilla/5.0 Firefox/153.0\n"
