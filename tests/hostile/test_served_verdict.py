"""``serve --columns N`` exits only once each page was sent its column's verdict (or is closed): the server could
otherwise close between a column's end and the page's next poll, and the page would never learn its verdict. A
column that stops on an error tells its page too."""

from __future__ import annotations

import threading
import time

from conformance.gpu.backends.served import PageClient
from conformance.tools.serve import ColumnRun


def test_a_verdict_counts_as_told_only_once_a_reply_carried_it():
    client = PageClient("c1")
    run = ColumnRun(client, [], None)
    client._reply({"idle": True})  # a reply before the verdict does not count
    run._show("conforms (0 passed)")
    assert not run.told
    reply = client._reply({"idle": True})
    assert b"conforms (0 passed)" in reply and run.told


def test_a_closed_page_needs_no_telling():
    client = PageClient("c1")
    run = ColumnRun(client, [], None)
    run._show("conforms (0 passed)")
    client.closed = "gone"
    assert run.told


def test_a_column_that_stops_tells_its_page_why():
    client = PageClient("c1")
    run = ColumnRun(client, [], None)

    def broken():
        raise RuntimeError("boom")

    run._run = broken
    data = run.run()
    assert data["result"] == "does-not-conform" and run.done.is_set()
    assert client.progress["verdict"] == "does-not-conform: the column stopped: RuntimeError: boom"
    assert not run.told and b"the column stopped" in client._reply({"idle": True}) and run.told


def test_a_verdict_ends_the_poll_waiting_for_a_batch():
    """The page learns its verdict at once, not a poll period later (``serve`` exits only once it has)."""
    client = PageClient("c1", poll_seconds=600)
    run = ColumnRun(client, [], None)
    hello = client.hello("x")
    replies = []
    poller = threading.Thread(target=lambda: replies.append(client.poll(hello["generation"], None, None)))
    poller.start()
    for _ in range(6000):  # until the poll waits for a batch
        if client.polls:
            break
        time.sleep(0.01)
    run._show("conforms (1 passed)")
    poller.join(60)
    assert not poller.is_alive(), "the poll waited on past the verdict"
    assert b"conforms (1 passed)" in replies[0] and run.told
