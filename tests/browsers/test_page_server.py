"""The page server faces a network (issue 31): the token, body caps, and answers checked before anything reads them.

These drive the server with plain HTTP requests (what a hostile or buggy page can send), and a real page session
(``page.Session`` over a ``served.PageClient``) whose batches that "page" answers.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request

import pytest

from conformance.gpu.backends.page import DeviceLostError, Session
from conformance.gpu.backends.served import MAX_ANSWER_BYTES, PageBackend, PageServer


@pytest.fixture
def server():
    s = PageServer(timeout=5, poll_seconds=0.2)
    yield s
    s.close()


def _request(url, body=None, method=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method or ("POST" if data is not None else "GET"))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_a_request_without_the_token_is_refused(server):
    base = f"http://127.0.0.1:{server.port}/"
    assert server.url.startswith(base) and len(server.token) >= 16
    for url in (
        base,
        base + "hello",
        base + "x" * len(server.token) + "/",
        base + server.token[:-1] + "/",
        base + "blob/page1/u00",
    ):
        status, body = _request(url)
        assert status == 403 and b"token" in body, (url, status, body)
    status, body = _request(server.url)
    assert status == 200 and b"navigator.gpu" in body
    assert server.refused == 5


def test_bodies_are_capped_and_checked(server):
    hello = json.loads(_request(server.url + "hello", {"userAgent": "test"})[1])
    client, key = hello["client"], hello["key"]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)  # the headers only: refused unread
    conn.putrequest("POST", f"/{server.token}/poll")
    conn.putheader("Content-Length", str(MAX_ANSWER_BYTES + 1))
    conn.endheaders()
    reply = conn.getresponse()
    assert reply.status == 413 and b"at most" in reply.read()
    conn.close()
    assert _request(server.url + "poll", b"[1, 2")[0] == 400
    assert _request(server.url + "poll", {"client": "nobody"})[0] == 404
    assert _request(server.url + "poll", {"client": client, "key": key, "seq": "one"})[0] == 400
    assert _request(server.url + f"blob/{client}/{key}/../../etc", b"x")[0] in (400, 404)
    assert _request(server.url + "hello", {"client": "../x"})[0] == 400


def _session(server):
    """A session on a page that this test answers by hand: (session, client id, generation)."""
    hello = json.loads(_request(server.url + "hello", {"userAgent": "Mozilla/5.0 Firefox/150.0"})[1])
    backend = PageBackend(server.clients[hello["client"]], connect_timeout=5)
    return Session(backend, backend.client.channel(5)), hello


def _answer_next(server, hello, answer, seq_shift=0):
    """Poll once for the batch in flight, then answer it with ``answer``."""
    me = {"client": hello["client"], "key": hello["key"], "generation": hello["generation"]}
    reply = json.loads(_request(server.url + "poll", me)[1])
    seq = reply["batch"]["seq"] + seq_shift
    _request(server.url + "poll", {**me, "seq": seq, "answer": answer})


@pytest.mark.parametrize(
    "answer, why",
    [
        ("not an object", "expected an object"),
        ({"results": [], "errors": [], "lost": {}}, "results: expected an object"),
        ({"results": {"99": 1}, "errors": [], "lost": {}}, "keys must be indices"),
        ({"results": {}, "errors": [{"index": "0"}], "lost": {}}, "errors: each must be"),
        ({"results": {}, "errors": [], "lost": []}, "lost: expected"),
        ({"results": {"0": {"b64": "AAAA" * 10}}, "errors": [], "lost": {}}, "a read of 4 bytes answered with more"),
        ({"results": {"0": {"blob": "dnever"}}, "errors": [], "lost": {}}, "which the page never posted"),
        ({"results": {"0": {"b64": "AAA="}}, "errors": [], "lost": {}}, "a read of 4 bytes answered with 2"),
    ],
)
def test_a_malformed_answer_fails_its_own_session_with_why(server, answer, why):
    session, hello = _session(server)
    page = threading.Thread(target=_answer_next, args=(server, hello, answer))
    page.start()
    with pytest.raises(DeviceLostError) as err:
        ref = session.call(["readBuffer", 0, 1, 0, 4])
        session.bytes_of(ref, 4)
    page.join()
    assert why in str(err.value) and "malformed answer" in str(err.value), str(err.value)


def test_an_answer_to_another_batch_or_from_a_replaced_page_is_not_taken(server):
    session, hello = _session(server)
    good = {"results": {"0": "ok"}, "errors": [], "lost": {}}

    def page():
        _answer_next(server, hello, {"results": {"0": "forged"}, "errors": [], "lost": {}}, seq_shift=1)
        me = {"client": hello["client"], "key": hello["key"]}
        stale = {**me, "generation": hello["generation"] - 1, "seq": 1, "answer": good}
        assert b"stale" in _request(server.url + "poll", stale)[1]
        _request(server.url + "poll", {**me, "generation": hello["generation"], "seq": 1, "answer": good})

    thread = threading.Thread(target=page)
    thread.start()
    assert session.call(["probeEncoderTimestamps", 0]) == "ok"
    thread.join()


def test_a_page_cannot_speak_for_another_pages_column(server):
    """The token lets a page in; only a page's own key (given at its hello) lets it answer, reload into or post
    blobs for its column."""
    victim = json.loads(_request(server.url + "hello", {"userAgent": "victim"})[1])
    cid, key = victim["client"], victim["key"]
    for path, body in (
        ("hello", {"client": cid}),
        ("hello", {"client": cid, "key": "guess"}),
        ("poll", {"client": cid, "generation": 1}),
        (f"blob/{cid}/guess/dx", b"x"),
    ):
        status, text = _request(server.url + path, body)
        assert status == 403 and b"not this page's key" in text, (path, status, text)
    assert _request(server.url + f"blob/{cid}/guess/u00")[0] == 403
    assert server.clients[cid].generation == 1  # the victim's page load still holds its column
    again = json.loads(_request(server.url + "hello", {"client": cid, "key": key, "userAgent": "victim"})[1])
    assert again["client"] == cid and again["generation"] == 2  # its own reload comes back to it
