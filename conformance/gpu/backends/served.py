"""The suite's HTTP server for browser pages, and a column per page that polls it: any browser is a column.

A page opened at ``http://HOST:PORT/<token>/`` (``served_page.js`` over the one page runtime, ``page_runtime.js``)
says hello, then polls: each poll carries the answer to the last batch and brings the next one back. So the
browser needs no driver (Firefox, Safari, a phone's Chrome); Chromium driven by Playwright loads the same
runtime from ``/<token>/driven`` and only uses the server's blob store (``chromium.py``).

The server is made to face a network:

* it binds 127.0.0.1 unless told otherwise; every path starts with a random token (compared in constant time),
  and a request without it is refused (403) before anything else is read;
* request bodies are capped (an answer :data:`MAX_ANSWER_BYTES`, a posted blob :data:`MAX_BLOB_BYTES`, a page's
  unclaimed blobs :data:`MAX_PENDING_BYTES`), names are checked, and what a page answers is only *stored* for
  its own column, whose session checks it (``page.check_answer``) before anything reads it: a hostile page can
  fail its own column, never the server or another column; nothing a page sends is written to disk;
* its places are given back: a server holds at most :data:`MAX_PAGES` live pages, one client address (an IPv6 /64)
  at most :data:`MAX_PAGES_PER_ADDRESS`; a page that says hello and never polls (no column is made for it), or whose
  column has finished, is freed once it is not heard from for :data:`IDLE_SECONDS` (``PageServer.free_abandoned``),
  so neither a script holding the URL nor tabs left open lock browsers out.

The server knows no implementation under test by name: one that runs in the page registers its page module, its
static routes and its import-map entries (:mod:`conformance.gpu.backends.page_modules`), and the page's HTML is made
when it is asked for, with the import map as registered then (an import map must come before the first module a
page imports).

One module of about 650 lines, on purpose: the request handler, a page's state (:class:`PageClient`) and its
column's backend (:class:`PageBackend`) are the two ends of one poll protocol under one set of locks, and are read
together when either end changes.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import secrets
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from conformance.gpu.backends.page import (
    DEFAULT_TIMEOUT,
    RUNTIME_JS,
    Adapter,
    MalformedAnswer,
    PageGone,
    Session,
    WebGPUError,
)
from conformance.gpu.backends.page_modules import EXTENSIONS, IMPORTS, MIME, ROUTES, RouteRefused, imports_generation

SERVED_JS = (Path(__file__).with_name("served_page.js")).read_text()
MAX_ANSWER_BYTES = 64 << 20  # one JSON request of a page (an answer with its inline reads)
MAX_BLOB_BYTES = 1 << 30  # one blob a page posts (a read-back larger than INLINE_LIMIT_DOWN)
MAX_PENDING_BYTES = 2 << 30  # a page's posted blobs not yet claimed by its session
MAX_SERVER_PENDING_BYTES = 2 << 30  # every page's together: each hello makes a page, so a per-page cap alone is none
MAX_PAGES = 256  # live pages (no column, or a column not finished) a server holds at once
MAX_PAGES_PER_ADDRESS = 16  # live pages one client address (an IPv6 /64) holds at once: one holder cannot take all
POLL_SECONDS = 10.0  # how long one poll waits for a batch before an idle reply
ALIVE_SECONDS = 3 * POLL_SECONDS  # a page not heard from for this long is not polling any more
IDLE_SECONDS = ALIVE_SECONDS  # ... and, with no column running, gives its place back (a reload then makes a new one)
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


def _page_html(title: str, body: str, script: str) -> bytes:
    imports = json.dumps({"imports": IMPORTS})
    return (
        "<!doctype html><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        f"<title>{title}</title><script type=importmap>{imports}</script>{body}<script>{RUNTIME_JS}</script>"
        f"<script>{script}</script>"
    ).encode()


def served_page() -> bytes:
    """The page a browser opens at the server's URL (a column per page), with the import map registered now."""
    return _page_html(
        "webgpu-kernel-conformance",
        "<h1>webgpu-kernel-conformance</h1>"
        "<p id=status>starting</p><progress id=bar value=0 max=1></progress>"
        "<p id=verdict></p><pre id=log></pre>",
        SERVED_JS,
    )


def driven_page() -> bytes:
    """The page Playwright's Chromium loads (``chromium.py``): the page runtime, its blobs through this server."""
    return _page_html(
        "webgpu",
        "",
        "const q = new URLSearchParams(location.search);"
        "window.__wgpu.setBlobBase(`blob/${q.get('client')}/${q.get('key')}/`);",
    )


class PageClient:
    """One page (one column): its batch channel, its blob store, its progress; survives reloads of the page.

    Each ``page.Session`` on it talks through a :class:`Channel` (:meth:`channel`): :meth:`send` hands a batch to
    the page's next poll and waits for the poll that answers it.
    """

    def __init__(
        self,
        cid: str,
        timeout: float = DEFAULT_TIMEOUT,
        poll_seconds: float = POLL_SECONDS,
        server_room=None,
        *,
        clock=time.monotonic,
        origin: str | None = None,
    ):
        self.id, self.timeout, self.poll_seconds = cid, timeout, poll_seconds
        self.server_room = server_room  # (bytes, keep) -> keep() when the server as a whole has room, else why not
        self.clock = clock  # when the page was last heard from (alive, idle): injectable for tests
        self.origin = origin  # the client address whose hello made it; None: made by the suite (a launcher)
        self.column = False  # whether ``on_page`` was told of it (it has a column, which reports it)
        self.key = secrets.token_urlsafe(16)  # what the page shows to speak for this column (hello, polls, blobs)
        self.generation = 0  # bumped by every hello: a reloaded page is a new generation
        self.imports = 0  # the import map's generation when the page said hello (imports_generation)
        self.user_agent = ""
        self.closed: str | None = None
        self.progress: dict = {}  # what the page shows: done, total, failed, verdict
        self.replies = 0  # poll replies sent, each carrying the progress as it was then
        self.last_seen = clock()
        self.polls = 0
        self._polling = 0  # polls of the page being answered now (a page inside one is heard from)
        self._cond = threading.Condition()
        self._seq = 0
        self._batch: list | None = None  # [seq, JSON payload, the page load that took it] of the batch in flight
        self._answers: dict[int, object] = {}
        self.uploads: dict[str, bytes] = {}
        self.downloads: dict[str, bytes] = {}

    # -- the session's side ----------------------------------------------------------------------
    def channel(self, connect_timeout: float) -> "Channel":
        """A transport for one session: bound to the page load that takes its first batch."""
        return Channel(self, connect_timeout)

    def send(self, channel: "Channel", cmds: list, uploads: list, inline_limit: int) -> dict:
        """Hand the batch to the page's next poll and wait for its answer: ``timeout`` seconds once the page took it,
        ``channel.connect_timeout`` until it does (a page reloading after a hang). A reload after the page took
        any batch of this session is :class:`PageGone` (its objects went with it)."""
        with self._cond:
            self._seq += 1
            seq = self._seq
            self._batch = [
                seq,
                json.dumps(
                    {"seq": seq, "cmds": cmds, "uploads": uploads, "inline": inline_limit, "timeout": self.timeout}
                ).encode(),
                None,
            ]
            self._cond.notify_all()
            deadline = time.monotonic() + channel.connect_timeout
            taken = None
            try:
                while seq not in self._answers:
                    if self.closed:
                        raise PageGone(self.closed)
                    bound = channel.generation or self._batch[2]
                    if bound is not None and bound != self.generation:
                        raise PageGone("the page was reloaded, or its tab crashed and was opened again")
                    if self._batch[2] is not None and taken is None:
                        taken = self._batch[2]
                        deadline = time.monotonic() + self.timeout
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError
                    self._cond.wait(remaining)
                channel.generation = channel.generation or self._batch[2]
            finally:
                self._batch = None
            answer = self._answers.pop(seq)
        if isinstance(answer, MalformedAnswer):
            raise answer
        return answer

    def put_blob(self, data: bytes) -> str:
        name = "u" + secrets.token_hex(16)
        self.uploads[name] = data
        return name

    def take_blob(self, name: str) -> bytes | None:
        return self.downloads.pop(name, None) if isinstance(name, str) else None

    def drop_blob(self, name: str) -> None:
        self.uploads.pop(name, None)

    def wait_alive(self, timeout: float) -> bool:
        """Whether the page polls (waiting up to ``timeout`` seconds for it to)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self.alive:
                if self.closed or time.monotonic() >= deadline:
                    return False
                self._cond.wait(min(1.0, max(0.01, deadline - time.monotonic())))
            return True

    def wait_hello(self, after: int, timeout: float) -> bool:
        """Whether a page load newer than generation ``after`` said hello (waiting up to ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.generation <= after:
                if self.closed or time.monotonic() >= deadline:
                    return False
                self._cond.wait(min(1.0, max(0.01, deadline - time.monotonic())))
            return True

    @property
    def alive(self) -> bool:
        return self.generation > 0 and self.clock() - self.last_seen < ALIVE_SECONDS

    @property
    def finished(self) -> bool:
        """Whether the page's column has ended (its verdict shown) or the page was closed: it holds no place."""
        return self.closed is not None or "verdict" in self.progress

    def idle(self, seconds: float) -> bool:
        """Whether no poll of the page is being answered and none came (nor a hello) for ``seconds``."""
        with self._cond:
            return not self._polling and self.clock() - self.last_seen >= seconds

    def close(self, why: str) -> None:
        with self._cond:
            self.closed = why
            self._cond.notify_all()

    def free(self, why: str) -> None:
        """Close the page and drop what it holds (its blobs): the server has let go of it."""
        self.close(why)
        self.uploads.clear()
        self.downloads.clear()

    def show(self, progress: dict) -> int:
        """Set what the page shows; the poll replies sent before it. A verdict ends the poll waiting for a batch,
        so the page learns it at once."""
        with self._cond:
            self.progress = progress
            if "verdict" in progress:
                self._cond.notify_all()
            return self.replies

    # -- the page's side (the request handler) -----------------------------------------------------
    def hello(self, user_agent: str) -> dict:
        with self._cond:
            self.generation += 1
            self.imports = imports_generation()
            self.user_agent = user_agent[:500]
            self.last_seen = self.clock()
            self.downloads.clear()
            self._cond.notify_all()
            return {
                "client": self.id,
                "key": self.key,
                "generation": self.generation,
                "blobBase": f"blob/{self.id}/{self.key}/",
            }

    def poll(self, generation, seq, answer) -> bytes:
        """Store the answer to batch ``seq`` (if it is the one in flight), then the next batch or an idle reply."""
        with self._cond:
            self._polling += 1
            try:
                return self._poll(generation, seq, answer)
            finally:
                self._polling -= 1
                self.last_seen = self.clock()

    def _poll(self, generation, seq, answer) -> bytes:
        """``poll`` under the page's lock."""
        self.last_seen = self.clock()
        self.polls += 1
        if generation != self.generation:
            return self._reply({"stale": "another page took this column over (a reload or a copied tab)"})
        if seq is not None and self._batch is not None and self._batch[0] == seq and self._batch[2] == generation:
            self._answers[seq] = answer
        self._cond.notify_all()
        deadline = time.monotonic() + self.poll_seconds
        shown = self.progress
        while (self._batch is None or self._batch[0] in self._answers) and not self.closed:
            remaining = deadline - time.monotonic()
            if (
                remaining <= 0
                or generation != self.generation
                or self.progress is not shown
                and "verdict" in self.progress
            ):
                break
            self._cond.wait(remaining)
            self.last_seen = self.clock()
        if (
            self._batch is not None
            and self._batch[0] not in self._answers
            and generation == self.generation
            and not self.closed
        ):
            self._batch[2] = generation
            self._cond.notify_all()
            self.replies += 1
            return b'{"progress": ' + json.dumps(self.progress).encode() + b', "batch": ' + self._batch[1] + b"}"
        return self._reply({"idle": True, "closed": self.closed})

    def _reply(self, data: dict) -> bytes:
        self.replies += 1
        return json.dumps({"progress": self.progress, **data}).encode()

    def store_download(self, name: str, body: bytes) -> str | None:
        """Keep a blob the page posted for its session; why not, or None."""
        pending = sum(len(b) for b in self.downloads.values())
        if pending + len(body) > MAX_PENDING_BYTES or len(self.downloads) >= 4096:
            return f"too much posted and not claimed ({pending:,} bytes)"
        keep = lambda: self.downloads.__setitem__(name, body)  # noqa: E731
        if self.server_room is None:
            return keep()
        return self.server_room(len(body), keep)


class Channel:
    """A ``page.Session``'s transport over a :class:`PageClient`: the page load it is bound to, and the blobs."""

    def __init__(self, client: PageClient, connect_timeout: float):
        self.client, self.connect_timeout = client, connect_timeout
        self.generation: int | None = None

    def send(self, cmds: list, uploads: list, inline_limit: int) -> dict:
        return self.client.send(self, cmds, uploads, inline_limit)

    def put_blob(self, data: bytes) -> str:
        return self.client.put_blob(data)

    def take_blob(self, name: str) -> bytes | None:
        return self.client.take_blob(name)

    def drop_blob(self, name: str) -> None:
        self.client.drop_blob(name)


def holder_of(address: str) -> str:
    """Who holds pages, for the per-address cap: an IPv4 address (also one mapped into IPv6), or an IPv6 /64 (a
    host is given a whole /64 and may speak from any address in it)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if not ip.is_loopback:
            return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class PageServer:
    """Serves pages and their channels under ``/<token>/``; ``on_page(client)`` is told of each new page: one the
    suite makes (:meth:`client`) at once, one a hello makes at its first poll (a hello that no poll follows is no
    column, and is freed once idle).

    Places: at most ``max_pages`` live pages (a page is live until its column has finished), of which at most
    ``max_pages_per_address`` made by hellos from one client address (:func:`holder_of`); a hello past either is
    refused saying why (503, 429). Before a hello is refused, the pages abandoned are freed
    (:meth:`free_abandoned`), on ``clock`` (injectable for tests).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        on_page=None,
        poll_seconds: float = POLL_SECONDS,
        max_pending_bytes: int = MAX_SERVER_PENDING_BYTES,
        max_pages: int = MAX_PAGES,
        max_pages_per_address: int = MAX_PAGES_PER_ADDRESS,
        idle_seconds: float = IDLE_SECONDS,
        clock=time.monotonic,
    ):
        self.token = token or secrets.token_urlsafe(18)
        self.max_pending_bytes, self.max_pages = max_pending_bytes, max_pages
        self.max_pages_per_address, self.idle_seconds, self.clock = max_pages_per_address, idle_seconds, clock
        self.freed = 0  # pages let go of (abandoned)
        self._blob_lock = threading.Lock()
        self.timeout, self.on_page, self.poll_seconds = timeout, on_page, poll_seconds
        self.clients: dict[str, PageClient] = {}
        self.refused = 0
        self._lock = threading.RLock()  # admit() frees abandoned pages under it
        self._ids = 0
        self.httpd = ThreadingHTTPServer((host, port), _handler(self))
        self.httpd.daemon_threads = True
        self.host, self.port = host, self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, name="webgpu-pages", daemon=True).start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/{self.token}/"

    def client(self, cid: str | None = None) -> PageClient:
        """The page ``cid`` (made on first use: a launcher then opens ``url_of`` it), or a new one."""
        with self._lock:
            if cid is None:
                self._ids += 1
                cid = f"page{self._ids}"
            new = cid not in self.clients
            if new:
                self.clients[cid] = PageClient(cid, self.timeout, self.poll_seconds, self._room, clock=self.clock)
            client = self.clients[cid]
        if new:
            self._announce(client)
        return client

    def admit(self, address: str) -> tuple[PageClient | None, int, str]:
        """A new page for a hello from ``address``; else (None, HTTP status, why not): the server holds
        ``max_pages`` live pages (503), or that address ``max_pages_per_address`` (429). Pages abandoned are
        freed first. ``on_page`` is told of the page at its first poll (:meth:`polled`)."""
        holder = holder_of(address)
        with self._lock:
            self.free_abandoned()
            live = [c for c in self.clients.values() if not c.finished]
            freed = f"a place is freed when a column ends, or {self.idle_seconds:g} s after a hello no poll followed"
            if len(live) >= self.max_pages:
                return None, 503, f"refused: this server holds {len(live)} pages, its limit ({freed}): try later"
            mine = sum(1 for c in live if c.origin == holder)
            if mine >= self.max_pages_per_address:
                return (
                    None,
                    429,
                    (
                        f"refused: {holder} holds {mine} live pages of this server, at most "
                        f"{self.max_pages_per_address} for one address ({freed})"
                    ),
                )
            self._ids += 1
            cid = f"page{self._ids}"
            client = self.clients[cid] = PageClient(
                cid, self.timeout, self.poll_seconds, self._room, clock=self.clock, origin=holder
            )
            return client, 200, ""

    def polled(self, client: PageClient) -> None:
        """``client``'s page polled: a page made by a hello is a column from its first poll (``on_page``)."""
        self._announce(client)

    def _announce(self, client: PageClient) -> None:
        """Tell ``on_page`` of ``client`` once, unless it was freed (a freed page is no column)."""
        with self._lock:
            if client.column or self.on_page is None or self.clients.get(client.id) is not client:
                return
            client.column = True
        self.on_page(client)

    def free_abandoned(self) -> int:
        """Let go of each page a hello made that holds a place for nothing: no column, or a column that has
        finished, and not heard from for ``idle_seconds``. A page whose column runs is kept however silent (its
        column says, after its reconnect timeout, that the page stopped polling). How many were freed."""
        with self._lock:
            gone = [
                c
                for c in self.clients.values()
                if c.origin is not None and (not c.column or c.finished) and c.idle(self.idle_seconds)
            ]
            for c in gone:
                del self.clients[c.id]
                c.free(f"not heard from for {self.idle_seconds:g} s: its place was given back")
            self.freed += len(gone)
            return len(gone)

    def _room(self, size: int, keep) -> str | None:
        """``keep()`` a posted blob of ``size`` bytes when the server has room for it (every page's unclaimed blobs
        counted, under one lock), and None; else why not."""
        with self._blob_lock:
            pending = sum(len(b) for c in list(self.clients.values()) for b in list(c.downloads.values()))
            if pending + size > self.max_pending_bytes:
                return (
                    f"the server holds {pending:,} bytes posted and not claimed, of all pages; at most "
                    f"{self.max_pending_bytes:,}"
                )
            keep()
            return None

    def url_of(self, client: PageClient, page: str = "") -> str:
        """The URL of ``client``'s own page (``page``: "" served, "driven" for Playwright): it carries its key."""
        return f"{self.url}{page}?client={client.id}&key={client.key}"

    def close(self) -> None:
        for client in list(self.clients.values()):
            client.close("the server was closed")
        self.httpd.shutdown()
        self.httpd.server_close()


def _quick_ack(sock) -> None:
    """ACK at once: a browser that sends a POST's body after its headers (Firefox) waits for the ACK of the headers,
    which Linux delays by up to 40 ms (measured: 45 ms a round trip without this)."""
    if hasattr(socket, "TCP_QUICKACK"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


def _handler(server: PageServer):
    prefix = f"/{server.token}/".encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def handle(self):
            try:
                super().handle()
            except (BrokenPipeError, ConnectionResetError):  # the page went away mid-reply: its poll is over
                pass

        def setup(self):
            super().setup()  # no Nagle: a small reply written after its headers waited ~40 ms for an ACK
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _quick_ack(self.connection)

        def _send(self, code, body=b"", ctype="application/octet-stream"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, code: int, why: str):
            self.close_connection = True
            self._send(code, why.encode() + b"\n", "text/plain; charset=utf-8")

        def _route(self) -> tuple[list[str], dict] | None:
            """The path after the token, or None (refused: a missing or wrong token)."""
            path = urlsplit(self.path)
            raw = path.path.encode()
            if not (len(raw) >= len(prefix) and hmac.compare_digest(raw[: len(prefix)], prefix)):
                server.refused += 1
                self._refuse(403, "refused: this server answers only URLs with the token it printed")
                return None
            return [p for p in path.path[len(prefix) :].split("/") if p], parse_qs(path.query)

        def _body(self, cap: int) -> bytes | None:
            try:
                n = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self._refuse(411, "refused: a request body needs a Content-Length")
                return None
            if n < 0 or n > cap:
                self._refuse(413, f"refused: a body of {n:,} bytes; at most {cap:,}")
                return None
            _quick_ack(self.connection)
            return self.rfile.read(n)

        def _client(self, cid, key) -> PageClient | None:
            """The page ``cid`` when ``key`` is its key (given to it at hello), else refused: a page that has the
            server's token still cannot speak for another page's column."""
            client = server.clients.get(cid) if isinstance(cid, str) else None
            if client is None:
                self._refuse(404, "refused: no such page (say hello first)")
            elif not (isinstance(key, str) and hmac.compare_digest(key.encode(), client.key.encode())):
                client = None
                self._refuse(403, "refused: that is not this page's key")
            return client

        def do_GET(self):
            route = self._route()
            if route is None:
                return
            parts, _ = route
            if not parts:
                self._send(200, served_page(), "text/html; charset=utf-8")
            elif parts == ["driven"]:
                self._send(200, driven_page(), "text/html; charset=utf-8")
            elif len(parts) == 2 and parts[0] == "ext" and parts[1].endswith(".mjs") and parts[1][:-4] in EXTENSIONS:
                self._send(200, EXTENSIONS[parts[1][:-4]].read_bytes(), MIME["mjs"])
            elif parts and parts[0] in ROUTES:  # registered by an implementation that runs in the page
                self._send_routed(parts)
            elif len(parts) == 4 and parts[0] == "blob" and (client := self._client(parts[1], parts[2])):
                body = client.uploads.pop(parts[3], None)
                self._send(404) if body is None else self._send(200, body)
            else:
                self._refuse(404, "refused: no such path")

        def _send_routed(self, parts: list[str]):
            """Answer ``parts`` by the route registered for its first segment (a path it has not: refused as any
            unknown path is)."""
            try:
                found = ROUTES[parts[0]](parts)
            except RouteRefused as err:
                return self._refuse(404, f"refused: {err}")
            if found is None:
                return self._refuse(404, "refused: no such path")
            self._send(200, *found)

        def do_POST(self):
            route = self._route()
            if route is None:
                return
            parts, _ = route
            if len(parts) == 4 and parts[0] == "blob":
                client = self._client(parts[1], parts[2])
                if client is None:
                    return
                if not NAME.match(parts[3]):
                    return self._refuse(400, "refused: a blob name is 1-64 letters, digits, - or _")
                body = self._body(MAX_BLOB_BYTES)
                if body is not None:
                    why = client.store_download(parts[3], body)
                    self._send(204) if why is None else self._refuse(413, f"refused: {why}")
                return
            if parts not in (["hello"], ["poll"]):
                return self._refuse(404, "refused: no such path")
            body = self._body(MAX_ANSWER_BYTES)
            if body is None:
                return
            try:
                message = json.loads(body)
            except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: [[[[... nested too deep
                message = None
            if not isinstance(message, dict):
                return self._refuse(400, "refused: the body must be a JSON object")
            if parts == ["hello"]:
                cid = message.get("client")  # a reloaded page comes back to its column with its key
                if cid is not None and not (isinstance(cid, str) and NAME.match(cid)):
                    return self._refuse(400, "refused: client must be 1-64 letters, digits, - or _")
                if cid in server.clients:  # a reload keeps its page; an unknown or freed one gets a new page
                    client = self._client(cid, message.get("key"))
                    if client is None:
                        return
                else:
                    client, code, why = server.admit(self.client_address[0])
                    if client is None:
                        return self._refuse(code, why)
                reply = client.hello(str(message.get("userAgent", ""))[:500])
                return self._send(200, json.dumps(reply).encode(), "application/json")
            client = self._client(message.get("client"), message.get("key"))
            if client is None:
                return
            seq = message.get("seq")
            answer = message.get("answer")
            if seq is not None and not isinstance(seq, int):
                return self._refuse(400, "refused: seq must be an integer")
            if "error" in message:  # the page's runtime itself threw running the batch
                answer = MalformedAnswer(f"the page runtime failed: {str(message['error'])[:2000]}")
            if message.get("generation") == client.generation:
                server.polled(client)
            self._send(200, client.poll(message.get("generation"), seq, answer), "application/json")

    return Handler


# -- a column per page ------------------------------------------------------------------------------
def engine_of(user_agent: str) -> str:
    """ "Firefox 153.0", "Chrome 156.0.7000.0", "Safari 18.1"... from a user agent (its last product wins)."""
    for name, pattern in (
        ("Firefox", r"Firefox/([\d.]+\w*)"),
        ("Edge", r"Edg/([\d.]+)"),
        ("Chrome", r"Chrome/([\d.]+)"),
        ("Safari", r"Version/([\d.]+).*Safari"),
    ):
        found = re.search(pattern, user_agent)
        if found:
            return f"{name} {found.group(1)}"
    return "browser"


class PageBackend:
    """The browser behind one served page, as a WebGPU implementation: ``enumerate_adapters()``, ``close()``.

    A lost session (a timeout, a reload, a malformed answer) is replaced by a fresh one on the same page once it
    polls again; ``relaunch`` (given by a launcher such as ``firefox.py``) gets a stuck browser going again.
    """

    recovery = "the page reloads itself (its own watchdog) and the next device waits for it"
    encoder_timestamps = False

    def __init__(self, client: PageClient, *, connect_timeout: float = 60.0, relaunch=None):
        self.client, self.connect_timeout, self.relaunch = client, connect_timeout, relaunch
        self.timeout = client.timeout
        self.closed = False
        self._lock = threading.RLock()
        self._session: Session | None = None
        if relaunch is not None:
            self.recovery = "the browser was stopped and started again at the same page"

    @property
    def engine(self) -> str:
        return engine_of(self.client.user_agent)

    def session(self) -> Session:
        with self._lock:
            if self.closed:
                raise WebGPUError("the browser backend is closed")
            if (
                self._session is not None
                and not self._session.lost
                and self.relaunch is not None
                and self.client.imports != imports_generation()
            ):  # its import map predates a registration
                self._session.lose("the page was loaded before an implementation added to its import map")
                loaded = self.client.generation
                self.relaunch()
                # the new page's hello first: a poll the old page left open must not take the next batch
                if not self.client.wait_hello(loaded, self.connect_timeout):
                    raise WebGPUError(
                        f"the page of column {self.client.id} did not come back within "
                        f"{self.connect_timeout:g} s of starting its browser again"
                    )
            if self._session is None or self._session.lost:
                if not self.client.wait_alive(self.connect_timeout):
                    raise WebGPUError(
                        f"no page polls for column {self.client.id} (waited {self.connect_timeout:g} s"
                        f" for a browser to open {self.client.id}'s URL)"
                    )
                self._session = Session(self, self.client.channel(self.connect_timeout))
                self._session.call(["reset", 0])
            return self._session

    def recover(self, session: Session) -> None:
        if self.relaunch is not None:
            self.relaunch()

    def enumerate_adapters(self) -> list[Adapter]:
        return [Adapter(self, self.session().call(["adapterInfo", 0]))]

    def close(self) -> None:
        with self._lock:
            self.closed = True
            if self._session is not None:
                self._session.lose("the browser backend was closed")


#: Served pages the ``serve`` command opened columns for: ``--webgpu=page:<id>`` names one (backends/__init__.py).
PAGES: dict[str, PageBackend] = {}


def enumerate_page_adapters(cid: str) -> list[Adapter]:
    backend = PAGES.get(cid)
    if backend is None:
        raise WebGPUError(f"no served page {cid!r} (pages: {', '.join(PAGES) or 'none'})")
    return backend.enumerate_adapters()
