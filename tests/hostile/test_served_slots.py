"""The places of ``serve``'s page server (issue 51, item 7): one URL holder must not lock every browser out.

Each hello makes a page, and a server holds at most ``MAX_PAGES`` of them. They used to be made and never freed:
256 bare hellos (a script with the URL) took every place, and every browser opened afterwards was refused for
the life of the server. Now a page that says hello and never polls, or whose column has finished, gives its place
back once it is not heard from for the idle limit; a page whose column is running keeps it (its column ends on its
own, saying the page stopped polling, so work done is never dropped unsaid); and one client address holds at most
``MAX_PAGES_PER_ADDRESS`` live pages, so one holder cannot take them all. Refusals say why (503 full, 429 this
address). "Not heard from for a while" is read on an injected clock: nothing here depends on how fast the machine
is.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from conformance.gpu.backends import served
from conformance.gpu.backends.served import PageServer

BROWSER, HOLDER = "127.0.0.1", "127.0.0.2"  # two client addresses of the loopback network


def post(url: str, data: dict, source: str = BROWSER) -> tuple[int, bytes]:
    """POST ``data`` as JSON from the local address ``source``."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60, source_address=(source, 0))
    try:
        conn.request("POST", parts.path, body=json.dumps(data), headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def hello(server: PageServer, source: str = BROWSER, **more) -> tuple[int, dict | bytes]:
    status, body = post(server.url + "hello", {"userAgent": "Mozilla/5.0 Firefox/153.0", **more}, source)
    return status, (json.loads(body) if status == 200 else body)


def poll(server: PageServer, page: dict, source: str = BROWSER) -> tuple[int, dict | bytes]:
    status, body = post(
        server.url + "poll", {"client": page["client"], "key": page["key"], "generation": page["generation"]}, source
    )
    return status, (json.loads(body) if status == 200 else body)


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bare_hellos_from_one_address_do_not_lock_a_browser_out():
    """The reported lock-out, with the server's own limits: as many bare hellos as the server has places, from one
    address, then a browser opened elsewhere says hello. It was refused (503) for the life of the server."""
    server = PageServer(poll_seconds=0.01)  # a poll with no batch for it answers at once
    try:
        held = [hello(server, HOLDER)[0] for _ in range(server.max_pages)]
        status, page = hello(server, BROWSER)
        assert status == 200, page  # the browser gets its page
        assert poll(server, page)[0] == 200
        assert held.count(200) == served.MAX_PAGES_PER_ADDRESS < server.max_pages, held
        status, body = hello(server, HOLDER)
        assert status == 429 and HOLDER.encode() in body and b"one address" in body, body
    finally:
        server.close()


def test_a_page_that_never_polls_gives_its_place_back_after_the_idle_limit():
    """A bare hello is no column (``on_page`` is told of a page at its first poll): once it is not heard from for
    the idle limit its place is freed, its key is void, and nothing of it is reported."""
    clock, columns = Clock(), []
    server = PageServer(max_pages=2, idle_seconds=30, clock=clock, poll_seconds=0.01, on_page=columns.append)
    try:
        first, second = hello(server)[1], hello(server)[1]
        status, body = hello(server)
        assert status == 503 and b"2 pages, its limit" in body and b"30 s" in body, body  # says when a place frees
        clock.now += 29
        assert hello(server)[0] == 503  # not yet idle for the limit
        assert poll(server, second)[0] == 200 and [c.id for c in columns] == [second["client"]]
        clock.now += 30
        status, third = hello(server)
        assert status == 200, third  # the bare hello's place was freed ...
        assert poll(server, first)[0] == 404  # ... and its key speaks for nothing now
        assert hello(server)[0] == 503  # the polled page, whose column runs, kept its place
        assert [c.id for c in columns] == [second["client"]] and server.freed == 1
    finally:
        server.close()


def test_a_running_column_keeps_its_place_and_a_finished_one_holds_none():
    """A page that polled has a column: it keeps its place while the column runs, however long the page is silent
    (the column decides, after ``--reconnect-timeout``, that its page stopped polling, and says so). Once the
    column has finished, its page holds no place: a tab left open on its verdict never blocks a new browser, and is
    freed when it stops polling."""
    clock, columns = Clock(), []
    server = PageServer(max_pages=1, idle_seconds=30, clock=clock, poll_seconds=0.01, on_page=columns.append)
    try:
        page = hello(server)[1]
        assert poll(server, page)[0] == 200 and len(columns) == 1
        clock.now += 10_000
        status, body = hello(server)
        assert status == 503, body  # a running column is never taken away
        columns[0].show({"done": 0, "total": 0, "failed": 0, "verdict": "does-not-conform"})
        status, reply = poll(server, page)
        assert status == 200 and reply["progress"]["verdict"] == "does-not-conform"  # its page is told
        status, other = hello(server)
        assert status == 200, other  # a finished column holds no place, polled or not
        assert poll(server, other)[0] == 200 and len(columns) == 2
        clock.now += 31
        assert hello(server)[0] == 503  # the other column runs, and holds the one place
        assert poll(server, page)[0] == 404 and server.freed == 1  # the finished page, silent, was freed
    finally:
        server.close()


def test_one_address_holds_at_most_its_share_and_is_told_why():
    """A per-address cap on live pages: the holder is refused (429, naming its address and the cap), a browser
    elsewhere is not, and a reload of a page the holder already has is never refused (it keeps its own)."""
    server = PageServer(max_pages=10, max_pages_per_address=2, clock=Clock())
    try:
        mine = [hello(server, HOLDER)[1] for _ in range(2)]
        status, body = hello(server, HOLDER)
        assert status == 429 and b"127.0.0.2 holds 2 live pages" in body and b"at most 2" in body, body
        assert hello(server, BROWSER)[0] == 200
        again = hello(server, HOLDER, client=mine[0]["client"], key=mine[0]["key"])
        assert again[0] == 200 and again[1]["client"] == mine[0]["client"] and again[1]["generation"] == 2
    finally:
        server.close()


def test_addresses_are_grouped_as_one_client_holds_them():
    """An IPv6 client is given a whole /64 (one host picks any address in it): the cap is per /64, and an IPv4
    address mapped into IPv6 is that IPv4 address."""
    assert served.holder_of("2001:db8:1:2::1") == served.holder_of("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert served.holder_of("2001:db8:1:3::1") != served.holder_of("2001:db8:1:2::1")
    assert served.holder_of("::ffff:192.0.2.7") == "192.0.2.7" == served.holder_of("192.0.2.7")
    assert served.holder_of("::1") == "::1"


def test_a_column_whose_page_is_gone_waits_for_it_once(monkeypatch):
    """A page that did work and vanished keeps its place while its column runs, so the column must end: it waits
    ``--reconnect-timeout`` for the page once, then the cases left are not run, and the column's result says the
    page stopped polling (nothing done is dropped unsaid). It used to wait again for every case left: a vanished
    page held its place, and ``serve --columns N`` its exit, for cases x the timeout."""
    from types import SimpleNamespace

    from conformance.certify.outcomes import verdict_for
    from conformance.engine.package import REPO_SPECS
    from conformance.gpu.backends.served import PageClient
    from conformance.tools import serve as tool

    clock = Clock()
    client = PageClient("page1", clock=clock, origin=BROWSER)
    client.hello("Mozilla/5.0 Firefox/153.0")
    waits = []
    real_wait = client.wait_alive
    monkeypatch.setattr(client, "wait_alive", lambda timeout: waits.append(timeout) or real_wait(timeout))

    def judge(checker, case, package):  # the first case runs, then the page is gone for good
        clock.now += 10_000
        return {**verdict_for(case).as_dict(), "status": "passed"}

    device = SimpleNamespace(name="a page")
    monkeypatch.setattr(
        tool, "ManifestImplementation", lambda **_: SimpleNamespace(device=device, describe=lambda: "a page")
    )
    monkeypatch.setattr(tool, "Checker", lambda impl: None)
    monkeypatch.setattr(tool, "probe_compute", lambda device: None)
    monkeypatch.setattr(tool, "judge", judge)
    monkeypatch.setattr(tool, "report_flags", lambda package, cases: [])
    monkeypatch.setattr(
        tool,
        "report",
        SimpleNamespace(device_line=str, build=lambda verdicts, **_: {"result": "does-not-conform", "conforms": False}),
    )
    packages = tool.load_packages(REPO_SPECS / "com.microsoft.Gelu", keep=lambda i: i.startswith("Gelu/f32/X["))
    assert sum(len(p[1]) for p in packages) >= 4
    run = tool.ColumnRun(client, packages, None, reconnect_timeout=0.01)
    data = run.run()
    assert waits == [0.01, 0.01], f"waited for the page {len(waits)} times"
    statuses = [v["status"] for v in run.verdicts]
    assert statuses[0] == "passed" and set(statuses[1:]) == {"not-run"} and len(statuses) == run.total
    why = "the page stopped polling (not back within 0.01 s)"
    assert all(v["detail"] == why for v in run.verdicts[1:]) and data["error"] == why
    assert client.finished  # its place is free once the page is silent
