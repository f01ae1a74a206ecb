"""A hostile page fails its own column only (issue 31): ``serve`` with a real Firefox page and, beside it, a "page"
that speaks the protocol badly (malformed answers, an oversized body, no token). Firefox's column conforms."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse

from tests.browsers.conftest import serve
from tests.hostile.conftest import make_specs  # noqa: F401 (a fixture)
from tests.hostile.test_broken_kernels import GELU

GARBAGE = [
    "not an object",
    {"results": [1], "errors": [], "lost": {}},
    {"results": {}, "errors": [{"index": 10**9, "op": "x", "kind": "x", "message": "x"}], "lost": {}},
]


def _post(url, path, body: bytes, length: int | None = None):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    conn.putrequest("POST", parts.path + path)
    conn.putheader("Content-Length", str(len(body) if length is None else length))
    conn.endheaders()
    if length is None:
        conn.send(body)
    reply = conn.getresponse()
    out = reply.status, reply.read()
    conn.close()
    return out


def _hostile(url: str, seen: dict) -> None:
    """Say hello, then answer every batch with garbage until the column's verdict shows."""
    hello = json.loads(_post(url, "hello", json.dumps({"userAgent": "Hostile/1.0"}).encode())[1])
    seen["oversized"] = _post(url, "poll", b"", length=1 << 40)
    seen["no token"] = _post(url.rsplit("/", 2)[0] + "/", "poll", b"{}")
    base = {"client": hello["client"], "key": hello["key"], "generation": hello["generation"]}
    message, n = dict(base), 0
    while n < 200:
        status, body = _post(url, "poll", json.dumps(message).encode())
        reply = json.loads(body)
        if reply["progress"].get("verdict"):
            seen["verdict"] = reply["progress"]["verdict"]
            return
        message = dict(base)
        if reply.get("batch"):
            message.update(seq=reply["batch"]["seq"], answer=GARBAGE[n % len(GARBAGE)])
            n += 1


def test_a_hostile_page_fails_its_own_column_and_the_others_finish(tmp_path, make_specs, open_browser):
    specs = make_specs(**{GELU: GELU})
    out = tmp_path / "out"
    proc, url, _ = serve(
        specs,
        "--columns",
        "2",
        "--report",
        str(out),
        "--cases",
        "Gelu/f32/X[5]*",
        "--cases",
        "Gelu/f32/X[7]*",
        "--reconnect-timeout",
        "5",
    )
    seen: dict = {}
    try:
        hostile = threading.Thread(target=_hostile, args=(url, seen), daemon=True)
        hostile.start()
        open_browser("firefox", url)
        text = proc.communicate(timeout=300)[0]
        hostile.join(60)
    finally:
        proc.kill()
    reports = {p.stem.split("-")[0]: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(reports) == ["browser", "firefox"], text[-2000:]
    assert reports["firefox"]["conforms"] and reports["firefox"]["totals"]["passed"] >= 2, text[-2000:]
    bad = reports["browser"]
    assert not bad["conforms"] and "the page sent a malformed answer" in bad["error"], bad.get("error")
    assert seen["oversized"][0] == 413 and b"at most" in seen["oversized"][1]
    assert seen["no token"][0] == 403 and b"token" in seen["no token"][1]
    assert seen["verdict"].startswith("does-not-conform")
    assert proc.returncode == 1  # one column does not conform
