"""WebGPU in headless Chromium, presented through the wgpu-py object subset the suite uses (see backends/__init__.py).

Why it is built this way:

* One browser and one page per :class:`Backend`, reused for many runs: launching costs ~1.5 s.
* Playwright's sync API is tied to the thread that started it, but the suite calls the device from
  worker threads (runtime.py). So Playwright's *async* API runs on a private event-loop thread and
  every call from any thread is handed over to it, each with a timeout.
* Round trips cost ~3 ms (a raw CDP Runtime.evaluate; Playwright's page.evaluate took ~10): proxies
  only *record* commands ([op, device id, args...]) with ids allocated here; a batch goes to the
  page's runtime (chromium_runtime.js, an object table keyed by those ids) only when a result is
  needed: compile and pipeline checks, map_sync, read_buffer.
* Bytes: up to 128 KiB ride inline as base64; larger ones go through a tiny HTTP server on
  127.0.0.1 that also serves the page (GET to upload, POST of a *Blob* to download; a POSTed
  Uint8Array crawled at ~5 MB/s): 4 MiB as a base64 string through CDP took ~1.2 s up and ~0.3 s
  down, the HTTP path ~60 ms each way (a fetch costs ~10 ms, hence the 128 KiB crossover).
* A page that stops answering (a shader that never ends on SwiftShader: Chromium has no watchdog
  for it there) is declared lost after ``timeout`` seconds; the GPU process (stuck in the shader) is
  killed by pid so Chromium starts a fresh one, and the next ``request_device_sync`` opens a new page.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import itertools
import json
import os
import re
import signal
import socket
import threading
import time
import uuid
import weakref
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.async_api import async_playwright

CHROMIUM = "/usr/bin/chromium"
#: --enable-unsafe-webgpu: the one flag needed: without it requestAdapter() answers null on Linux.
#: --enable-features=Vulkan: Dawn's Vulkan backend; the SwiftShader adapter is offered without it too.
#: --enable-webgpu-developer-features: the full adapter.info (description "SwiftShader Device (Subzero)",
#:   driver, backend "vulkan", type "CPU"); without it only vendor/architecture are filled in.
#: --disable-gpu-process-crash-limit: we kill a hung GPU process; after the 3rd kill Chromium would
#:   give up on the GPU and requestAdapter() would answer null.
FLAGS = ("--enable-unsafe-webgpu", "--enable-features=Vulkan", "--enable-webgpu-developer-features",
         "--disable-gpu-process-crash-limit")
DEFAULT_TIMEOUT = 25.0  # seconds one batch may take before the page is declared lost
INLINE_LIMIT = 128 * 1024  # bytes sent inline as base64; larger ones go through the HTTP server
INLINE_LIMIT_DOWN = 128 * 1024  # the same for bytes coming back
MAX_BATCH = 4096  # commands queued before a flush is forced (bounds memory when nothing reads)
RUNTIME_JS = (Path(__file__).with_name("chromium_runtime.js")).read_text()


class WebGPUError(RuntimeError):
    """An error reported by the browser's WebGPU implementation (message text is the browser's)."""


class ValidationError(WebGPUError):
    pass


class OutOfMemoryError(WebGPUError):
    pass


class DeviceLostError(WebGPUError):
    pass


# -- names --------------------------------------------------------------------------------------
def kebab(name: str) -> str:
    """``maxTextureDimension1D`` -> ``max-texture-dimension-1d`` (wgpu-py's spelling)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z0-9])", "-", name).lower()


def camel(name: str) -> str:
    """``max-texture-dimension-1d`` (or snake_case) -> ``maxTextureDimension1D``."""
    head, *rest = name.replace("_", "-").split("-")
    out = head + "".join(p[:1].upper() + p[1:] for p in rest)
    return re.sub(r"(\d)d$", r"\1D", out)


def _bytes(data) -> bytes:
    return data if isinstance(data, bytes) else memoryview(data).cast("B").tobytes()


# -- the HTTP side channel ------------------------------------------------------------------------
class _Server:
    """Serves the page (a secure context: 127.0.0.1) and moves large byte blobs both ways."""

    def __init__(self):
        self.blobs: dict[str, bytes] = {}
        page = ("<!doctype html><meta charset=utf-8><title>webgpu</title><script>"
                + RUNTIME_JS + "</script>").encode()
        blobs = self.blobs

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()  # no Nagle: a small reply written after its headers waited ~40 ms for an ACK
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _send(self, code, body=b"", ctype="application/octet-stream"):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.startswith("/blob/"):
                    body = blobs.pop(self.path[6:], None)
                    self._send(404) if body is None else self._send(200, body)
                else:
                    self._send(200, page, "text/html; charset=utf-8")

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                if self.path.startswith("/blob/"):
                    blobs[self.path[6:]] = body
                    self._send(204)
                else:
                    self._send(404)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, name="webgpu-blobs", daemon=True).start()

    def put(self, data: bytes) -> str:
        token = "u" + uuid.uuid4().hex
        self.blobs[token] = data
        return token

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# -- the browser ----------------------------------------------------------------------------------
class Backend:
    """One headless Chromium with one page (replaced when lost); ``enumerate_adapters()`` and ``close()``."""

    def __init__(self, *, timeout: float | None = None, flags=FLAGS, executable_path: str = CHROMIUM,
                 encoder_timestamps: bool = False):
        """Launch Chromium (``launch_seconds`` says how long it took).

        ``timeout``: seconds a batch may take before the page counts as lost (default
        ``CONFORMANCE_BROWSER_TIMEOUT`` or 25). ``encoder_timestamps``: list "timestamp-query-inside-encoders"
        in device features when Chromium's GPUCommandEncoder.writeTimestamp works (a probe at device creation;
        it does in Chromium 156). Off by default: the suite's timing.py calls wgpu-native's
        ``extras.write_timestamp``, which asserts a wgpu-native encoder; only a caller that uses
        ``encoder.write_timestamp`` should turn it on."""
        self.encoder_timestamps = encoder_timestamps
        self.timeout = float(timeout or os.environ.get("CONFORMANCE_BROWSER_TIMEOUT") or DEFAULT_TIMEOUT)
        self.flags, self.executable_path = tuple(flags), executable_path
        self.server = _Server()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="webgpu-browser", daemon=True)
        self._thread.start()
        self._lock = threading.RLock()
        self._session: _Session | None = None
        self._pw = self._browser = None
        self.closed = False
        self.gpu_kills = 0  # hung GPU processes killed so far
        start = time.perf_counter()
        try:
            self._call(self._launch(), 60)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self.server.close()
            raise
        self.launch_seconds = time.perf_counter() - start

    # -- plumbing: every Playwright call runs on the loop thread --------------------------------
    def _call(self, coro, timeout: float):
        """Run ``coro`` on the browser thread; raise TimeoutError after ``timeout`` seconds."""
        fut = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout), self._loop)
        try:
            return fut.result(timeout + 5)
        except (asyncio.TimeoutError, TimeoutError):
            fut.cancel()
            raise TimeoutError(f"no answer from the browser within {timeout:g} s") from None

    async def _launch(self):
        self._pw = await async_playwright().start()
        self._browser = await self._pw.chromium.launch(
            executable_path=self.executable_path, headless=True, args=list(self.flags),
            env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")})
        self._cdp = await self._browser.new_browser_cdp_session()
        self.version = self._browser.version

    async def _new_page(self):
        """A page on our server, and a raw CDP session to it (the command channel)."""
        page = await self._browser.new_page()
        await page.goto(self.server.url)
        await page.wait_for_function("window.__wgpu !== undefined")
        return page, await page.context.new_cdp_session(page)

    async def _gpu_pids(self) -> list[int]:
        info = await self._cdp.send("SystemInfo.getProcessInfo")
        return [p["id"] for p in info["processInfo"] if p["type"] == "GPU"]

    def session(self) -> "_Session":
        """The live page, opening a fresh one if the last was lost."""
        with self._lock:
            if self.closed:
                raise WebGPUError("the browser backend is closed")
            if self._session is None or self._session.lost:
                try:
                    page, cdp = self._call(self._new_page(), 30)
                except Exception:  # the browser itself is unusable: start another one
                    self._relaunch()
                    page, cdp = self._call(self._new_page(), 30)
                self._session = _Session(self, page, cdp)
            return self._session

    def _recover(self, session: "_Session") -> None:
        """After a timeout: kill the GPU process (stuck in a shader) by pid, close the page."""
        with self._lock:
            try:
                for pid in self._call(self._gpu_pids(), 10):
                    os.kill(pid, signal.SIGKILL)
                    self.gpu_kills += 1
            except Exception:
                self._relaunch()
                return
            try:
                self._call(session.page.close(run_before_unload=False), 10)
            except Exception:
                self._relaunch()

    async def _stop(self):
        try:
            await self._browser.close()
        finally:
            await self._pw.stop()

    def _relaunch(self) -> None:
        """The last resort when the browser itself does not answer: a new one."""
        try:
            self._call(self._stop(), 15)
        except Exception:
            pass
        self._call(self._launch(), 60)

    def enumerate_adapters(self) -> list["Adapter"]:
        """The browser's adapter (Chromium offers one): info, features and limits from the page."""
        sess = self.session()
        got = sess.call(["adapterInfo", 0])
        return [Adapter(self, got)]

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self._session is not None:
                self._session.lose("the browser backend was closed")

            try:
                self._call(self._stop(), 20)
            except Exception:
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self.server.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Session:
    """One page: the command queue, id allocation, batches and their errors."""

    def __init__(self, backend: Backend, page, cdp):
        self.backend, self.page, self.cdp = backend, page, cdp
        self.ids = itertools.count(1)
        self.cmds: list = []
        self.uploads: list[str] = []
        self.drops: list[int] = []
        self.lost: str | None = None
        self.dev_lost: dict[int, str] = {}
        self._queue_lock = threading.Lock()   # held briefly: pushing never waits for a flush
        self._flush_lock = threading.Lock()   # one batch in flight per page
        self.batches = 0

    def new_id(self) -> int:
        return next(self.ids)

    def check(self, dev_id: int = 0) -> None:
        if self.lost:
            raise DeviceLostError(self.lost)
        if dev_id in self.dev_lost:
            raise DeviceLostError(self.dev_lost[dev_id])

    def data_ref(self, data: bytes) -> dict:
        """Inline base64 for small data, else a blob token fetched by the page from our server."""
        if len(data) <= INLINE_LIMIT:
            return {"b64": base64.b64encode(data).decode("ascii")}
        token = self.backend.server.put(data)
        with self._queue_lock:
            self.uploads.append(token)
        return {"blob": token}

    def push(self, cmd: list) -> int:
        """Queue a command; index in the batch it will join."""
        self.check(cmd[1])
        with self._queue_lock:
            self.cmds.append(cmd)
            n = len(self.cmds)
        if n >= MAX_BATCH:
            self.flush()
        return n - 1

    def call(self, cmd: list, *, own_errors: bool = False):
        """Queue ``cmd``, send the batch, return ``cmd``'s result, raising the batch's errors.

        With ``own_errors`` the errors of ``cmd`` itself are returned, ``(result, [error, ...])``, so the
        caller can word them (compile diagnostics); errors of earlier commands still raise.
        """
        self.check(cmd[1])
        with self._flush_lock:
            with self._queue_lock:
                self.cmds.append(cmd)
                index = len(self.cmds) - 1
            results, own = self._flush_locked(index if own_errors else None)
        result = results.get(str(index))
        return (result, own) if own_errors else result

    def flush(self) -> None:
        with self._flush_lock:
            self._flush_locked()

    def _drop(self, obj_id: int) -> None:
        self.drops.append(obj_id)  # from a finalizer, any thread: a plain append, no lock

    def _flush_locked(self, own_index: int | None = None) -> tuple[dict, list]:
        with self._queue_lock:
            cmds, uploads, drops = self.cmds, self.uploads, self.drops
            self.cmds, self.uploads, self.drops = [], [], []
        if drops:
            cmds.append(["drop", 0, drops])
        if not cmds:
            return {}, []
        self.check()
        self.batches += 1
        # CDP's Runtime.evaluate straight away: ~3 ms a batch where Playwright's page.evaluate took ~10
        expression = f"window.__wgpu.run({json.dumps(cmds)}, {json.dumps(uploads)}, {INLINE_LIMIT_DOWN})"
        try:
            reply = self.backend._call(self.cdp.send("Runtime.evaluate", {
                "expression": expression, "awaitPromise": True, "returnByValue": True}), self.backend.timeout)
        except TimeoutError:
            self.lose(f"device lost: the page did not answer within {self.backend.timeout:g} s (a shader that "
                      f"never ends?); its GPU process was killed and the page closed, a new device gets a fresh page")
            self.backend._recover(self)
            raise DeviceLostError(self.lost) from None
        except Exception as exc:  # page crashed, browser gone, or the runtime itself threw
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if "closed" in text.lower() or "crash" in text.lower() or "disconnected" in text.lower():
                self.lose(f"device lost: the page is gone ({text})")
                raise DeviceLostError(self.lost) from None
            raise WebGPUError(f"page runtime failed: {text}") from None
        finally:
            for token in uploads:
                self.backend.server.blobs.pop(token, None)
        if "exceptionDetails" in reply:  # the runtime itself threw (a bug here, not a WebGPU error)
            details = reply["exceptionDetails"]
            raise WebGPUError("page runtime failed: " + details.get("exception", {}).get("description", details["text"]))
        answer = reply["result"]["value"]
        for dev, text in answer["lost"].items():
            self.dev_lost[int(dev)] = f"device lost ({text})"
        errors, seen = [], set()
        for e in sorted(answer["errors"], key=lambda e: e["index"] if e["index"] >= 0 else 1 << 30):
            if e["message"] not in seen:  # Chromium can report one error to two scopes
                seen.add(e["message"])
                errors.append(e)
        own = [e for e in errors if own_index is not None and e["index"] == own_index]
        errors = [e for e in errors if e not in own]
        if errors:
            errors += own
            msg = "\n".join(f"{e['kind']} {_where(e['op'])}: {e['message']}" for e in errors)
            kinds = {e["kind"] for e in errors}
            lost = [self.dev_lost[int(d)] for d in answer["lost"]]
            if lost:
                raise DeviceLostError("\n".join(lost + [msg]))
            cls = OutOfMemoryError if "out of memory" in kinds else ValidationError if (
                "validation error" in kinds) else WebGPUError
            raise cls(msg)
        if answer["lost"]:
            raise DeviceLostError("\n".join(self.dev_lost[int(d)] for d in answer["lost"]))
        return answer["results"], own

    def bytes_of(self, ref: dict) -> bytes:
        if "b64" in ref:
            return base64.b64decode(ref["b64"])
        return self.backend.server.blobs.pop(ref["blob"])

    def lose(self, message: str) -> None:
        self.lost = self.lost or message
        with self._queue_lock:
            for token in self.uploads:
                self.backend.server.blobs.pop(token, None)
            self.cmds, self.uploads = [], []


def _where(ops: str) -> str:
    """Which calls an error scope covered: one call, or the batch of calls recorded since the last check."""
    names = list(dict.fromkeys(ops.split(",")))
    return f"in {names[0]}" if len(names) == 1 else f"in a batch of recorded calls ({', '.join(names)})"


class _Obj:
    """A proxy: an id in its page's object table; the JS object is dropped when the proxy dies."""

    def __init__(self, session: _Session, label=""):
        self._session, self._id, self.label = session, session.new_id(), label or ""
        weakref.finalize(self, session._drop, self._id)


# -- adapter and device ---------------------------------------------------------------------------
_TYPES = {"cpu": "CPU", "discrete gpu": "DiscreteGPU", "integrated gpu": "IntegratedGPU",
          "virtual gpu": "VirtualGPU"}


class Adapter:
    """The page's adapter, described by ``adapter.info`` (developer features give the full info)."""

    def __init__(self, backend: Backend, got: dict):
        self._backend = backend
        raw = got["info"]
        self.raw_info, self.user_agent, self.wgsl_language_features = raw, got["userAgent"], set(got["wgsl"])
        kind = _TYPES.get(str(raw.get("type", "")).lower(), "CPU" if raw.get("isFallbackAdapter") else "Unknown")
        api = str(raw.get("backend", "")).capitalize().replace("Opengl", "OpenGL").replace("D3d12", "D3D12")
        name = raw.get("description") or raw.get("device") or raw.get("architecture") or "WebGPU adapter"
        self.info = {"device": name, "adapter_type": kind,
                     "backend_type": f"WebGPU(Chromium {backend.version})" + (f"/{api}" if api else ""),
                     "description": raw.get("driver") or raw.get("description") or "",
                     "vendor": raw.get("vendor", ""), "architecture": raw.get("architecture", ""),
                     "device_id": raw.get("device", ""), "is_fallback_adapter": bool(raw.get("isFallbackAdapter")),
                     "subgroup_min_size": raw.get("subgroupMinSize"), "subgroup_max_size": raw.get("subgroupMaxSize")}
        self.limits = {kebab(k): v for k, v in got["limits"].items()}
        self.features = set(got["features"])

    @property
    def summary(self) -> str:
        return f"{self.info['device']} ({self.info['adapter_type']}, {self.info['backend_type']})"

    def request_device_sync(self, *, label: str = "", required_features=(), required_limits=None,
                            default_queue=None) -> "Device":
        """Open a device in the page (a fresh page if the last one was lost); refusals raise with the browser's text."""
        sess = self._backend.session()
        dev = Device(sess, label)
        features = [f for f in required_features if f != "timestamp-query-inside-encoders"]
        limits = {camel(k): int(v) for k, v in (required_limits or {}).items()}
        try:
            got = sess.call(["requestDevice", 0, dev._id, label or "", features, limits])
        except WebGPUError as exc:
            raise WebGPUError(f"request_device refused: {exc}") from None
        dev._setup(self, got)
        if "timestamp-query" in dev.features:
            probe = sess.call(["probeEncoderTimestamps", dev._id])
            dev.encoder_timestamps = probe
            if probe == "ok" and self._backend.encoder_timestamps:
                dev.features.add("timestamp-query-inside-encoders")
        if "timestamp-query-inside-encoders" in required_features and \
                "timestamp-query-inside-encoders" not in dev.features:
            raise WebGPUError(f"request_device refused: timestamp-query-inside-encoders: {dev.encoder_timestamps}")
        return dev


class Device(_Obj):
    """A GPUDevice in the page. ``create_*`` record; compile and pipeline checks flush and raise."""

    def _setup(self, adapter: Adapter, got: dict):
        self.adapter = adapter
        self.features = set(got["features"])
        self.limits = {kebab(k): v for k, v in got["limits"].items()}
        self.queue = Queue(self)
        self.encoder_timestamps = "no timestamp-query"

    def _push(self, op, *args) -> None:
        self._session.push([op, self._id, *args])

    def timestamp_period_ns(self) -> float:
        """WebGPU (Chromium included) resolves timestamps in nanoseconds."""
        return 1.0

    @property
    def lost(self) -> str | None:
        return self._session.lost or self._session.dev_lost.get(self._id)

    def destroy(self) -> None:
        """Destroy now (frees the page's memory); the loss it causes is not an error of this call."""
        if not self.lost:
            self._push("destroy", self._id)
            try:
                self._session.flush()
            except DeviceLostError:
                if not self.lost:
                    raise

    # -- buffers --
    def create_buffer(self, *, label: str = "", size: int, usage: int, mapped_at_creation: bool = False) -> "Buffer":
        buf = Buffer(self, label, size, usage)
        self._push("createBuffer", buf._id, buf.label, int(size), int(usage), bool(mapped_at_creation))
        if mapped_at_creation:
            buf._mapped = (2, 0, None)
        return buf

    def create_buffer_with_data(self, *, label: str = "", data, usage: int) -> "Buffer":
        raw = _bytes(data)
        size = (len(raw) + 3) & ~3  # wgpu-py rounds up to a multiple of 4
        raw += b"\0" * (size - len(raw))
        buf = Buffer(self, label, size, usage)
        self._push("createBufferWithData", buf._id, buf.label, size, int(usage), self._session.data_ref(raw))
        return buf

    # -- shaders and pipelines --
    def create_shader_module(self, *, label=None, code: str, compilation_hints=None) -> "ShaderModule":
        """Compiles now: raises with Tint's diagnostics as ``wgsl:LINE:COL error: ...`` lines."""
        mod = ShaderModule(self._session, label)
        messages, errors = self._session.call(["createShaderModule", self._id, mod._id, mod.label, code],
                                              own_errors=True)
        mod.compilation_messages = messages or []
        diagnostics = [f"wgsl:{m['line']}:{m['col']} {m['type']}: {m['message']}"
                       for m in mod.compilation_messages if m["type"] == "error"]
        if diagnostics or errors:
            raise ValidationError(f"Shader {mod.label!r} failed to compile:\n" + "\n".join(
                diagnostics + [f"{e['kind']}: {e['message']}" for e in errors]))
        return mod

    def create_bind_group_layout(self, *, label: str = "", entries) -> "BindGroupLayout":
        out = []
        for e in entries:
            entry = {"binding": e["binding"], "visibility": int(e["visibility"])}
            if "buffer" in e:
                b = e["buffer"]
                entry["buffer"] = {"type": str(b.get("type", "uniform")),
                                   "hasDynamicOffset": bool(b.get("has_dynamic_offset", False)),
                                   "minBindingSize": int(b.get("min_binding_size", 0))}
            else:
                raise NotImplementedError("only buffer bindings are supported by the browser backend")
            out.append(entry)
        layout = BindGroupLayout(self._session, label)
        self._push("createBindGroupLayout", layout._id, layout.label, out)
        return layout

    def create_pipeline_layout(self, *, label: str = "", bind_group_layouts) -> "PipelineLayout":
        layout = PipelineLayout(self._session, label)
        self._push("createPipelineLayout", layout._id, layout.label, [lay._id for lay in bind_group_layouts])
        return layout

    def create_compute_pipeline(self, *, label=None, layout, compute: dict) -> "ComputePipeline":
        """Validated now: a mismatch of layout and shader raises here with the browser's message."""
        pipe = ComputePipeline(self, label)
        layout_ref = "auto" if isinstance(layout, str) else layout._id
        self._session.call(["createComputePipeline", self._id, pipe._id, pipe.label, layout_ref,
                            compute["module"]._id, compute.get("entry_point"), compute.get("constants") or {}])
        return pipe

    def create_bind_group(self, *, label: str = "", layout, entries) -> "BindGroup":
        out = []
        for e in entries:
            res = e["resource"]
            if not isinstance(res, dict) or "buffer" not in res:
                raise NotImplementedError("only buffer resources are supported by the browser backend")
            size = res.get("size")
            out.append([e["binding"], res["buffer"]._id, int(res.get("offset", 0)), None if size is None else int(size)])
        group = BindGroup(self._session, label)
        self._push("createBindGroup", group._id, group.label, layout._id, out)
        return group

    def create_query_set(self, *, label: str = "", type, count: int) -> "QuerySet":
        qs = QuerySet(self, label)
        self._push("createQuerySet", qs._id, qs.label, str(getattr(type, "value", type)), int(count))
        return qs

    def create_command_encoder(self, *, label: str = "") -> "CommandEncoder":
        enc = CommandEncoder(self, label)
        self._push("createCommandEncoder", enc._id, enc.label)
        return enc


class Queue:
    """The device's queue. ``submit`` only records; ``read_buffer`` flushes and waits."""

    def __init__(self, device: Device):
        self._device = device

    def submit(self, command_buffers) -> None:
        self._device._push("submit", [cb._id for cb in command_buffers])

    def write_buffer(self, buffer, buffer_offset: int, data, data_offset: int = 0, size: int | None = None) -> None:
        raw = _bytes(data)
        raw = raw[data_offset:] if size is None else raw[data_offset:data_offset + size]
        self._device._push("writeBuffer", buffer._id, int(buffer_offset), self._device._session.data_ref(raw))

    def read_buffer(self, buffer, buffer_offset: int = 0, size: int | None = None) -> bytes:
        size = buffer.size - buffer_offset if not size else size
        ref = self._device._session.call(["readBuffer", self._device._id, buffer._id, int(buffer_offset), int(size)])
        return self._device._session.bytes_of(ref)

    def on_submitted_work_done_sync(self) -> None:
        """Flush and wait until the page's queue is idle."""
        self._device._session.call(["workDone", self._device._id])


class Buffer(_Obj):
    def __init__(self, device: Device, label, size: int, usage: int):
        super().__init__(device._session, label)
        self._device, self.size, self.usage = device, int(size), int(usage)
        self._mapped = None      # (mode, offset, size) while mapped
        self._data = None        # bytes read by map_sync(READ)
        self._writes: list = []  # (offset, bytes) for write_mapped, sent with unmap

    @property
    def map_state(self) -> str:
        return "mapped" if self._mapped else "unmapped"

    def map_sync(self, mode: int = 1, offset: int = 0, size: int | None = None) -> None:
        """Map now (a round trip); a READ mapping brings the bytes back with it."""
        if isinstance(mode, str):  # wgpu-py also accepts "READ" / "WRITE"
            mode = {"READ": 1, "WRITE": 2}[mode.upper()]
        mode = int(mode)
        ref = self._session.call(["mapAsync", self._device._id, self._id, mode, int(offset), size])
        self._mapped = (mode, int(offset), size)
        self._data = self._session.bytes_of(ref) if ref else None

    def read_mapped(self, buffer_offset: int | None = None, size: int | None = None, *, copy: bool = True):
        if not self._mapped or self._data is None:
            raise WebGPUError("read_mapped: the buffer is not mapped for reading (call map_sync(mode=1) first)")
        start = (buffer_offset or self._mapped[1]) - self._mapped[1]
        end = len(self._data) if size is None else start + size
        return memoryview(self._data[start:end])

    def write_mapped(self, data, buffer_offset: int | None = None) -> None:
        if not self._mapped or not self._mapped[0] & 2:
            raise WebGPUError("write_mapped: the buffer is not mapped for writing")
        self._writes.append((self._mapped[1] if buffer_offset is None else int(buffer_offset), _bytes(data)))

    def unmap(self) -> None:
        writes = [[off, self._session.data_ref(raw)] for off, raw in self._writes]
        rng = [self._mapped[1], self._mapped[2]] if self._mapped else [0, None]
        self._writes, self._mapped, self._data = [], None, None
        self._session.push(["unmap", 0, self._id, rng, writes])

    def destroy(self) -> None:
        if not self._session.lost:
            self._session.push(["destroy", 0, self._id])


class ShaderModule(_Obj):
    compilation_messages: list = []


class BindGroupLayout(_Obj):
    pass


class PipelineLayout(_Obj):
    pass


class BindGroup(_Obj):
    pass


class CommandBuffer(_Obj):
    pass


class ComputePipeline(_Obj):
    def __init__(self, device: Device, label):
        super().__init__(device._session, label)
        self._device = device

    def get_bind_group_layout(self, index: int) -> BindGroupLayout:
        layout = BindGroupLayout(self._session)
        self._session.push(["getBindGroupLayout", 0, layout._id, self._id, int(index)])
        return layout


class QuerySet(_Obj):
    def __init__(self, device: Device, label):
        super().__init__(device._session, label)
        self._device = device

    def destroy(self) -> None:
        if not self._session.lost:
            self._session.push(["destroy", 0, self._id])


class CommandEncoder(_Obj):
    """Records into the page's encoder; errors surface from ``finish`` at the next flush."""

    def __init__(self, device: Device, label):
        super().__init__(device._session, label)
        self._device = device

    def _push(self, op, *args):
        self._session.push([op, 0, self._id, *args])

    def begin_compute_pass(self, *, label: str = "", timestamp_writes=None) -> "ComputePassEncoder":
        cpass = ComputePassEncoder(self._session, label)
        tw = None
        if timestamp_writes:
            tw = [timestamp_writes["query_set"]._id, timestamp_writes.get("beginning_of_pass_write_index"),
                  timestamp_writes.get("end_of_pass_write_index")]
        self._session.push(["beginComputePass", 0, cpass._id, self._id, cpass.label, tw])
        return cpass

    def copy_buffer_to_buffer(self, source, source_offset, destination, destination_offset, size) -> None:
        self._push("copyBufferToBuffer", source._id, int(source_offset), destination._id, int(destination_offset),
                   int(size))

    def clear_buffer(self, buffer, offset: int = 0, size: int | None = None) -> None:
        self._push("clearBuffer", buffer._id, int(offset), size)

    def resolve_query_set(self, query_set, first_query, query_count, destination, destination_offset) -> None:
        self._push("resolveQuerySet", query_set._id, int(first_query), int(query_count), destination._id,
                   int(destination_offset))

    def write_timestamp(self, query_set, query_index: int) -> None:
        """Encoder-level timestamp (Chromium's GPUCommandEncoder.writeTimestamp, developer features)."""
        self._push("writeTimestamp", query_set._id, int(query_index))

    def finish(self, *, label: str = "") -> CommandBuffer:
        cb = CommandBuffer(self._session, label)
        self._session.push(["finish", self._device._id, self._id, cb._id, cb.label])
        return cb


class ComputePassEncoder(_Obj):
    def _push(self, op, *args):
        self._session.push([op, 0, self._id, *args])

    def set_pipeline(self, pipeline) -> None:
        self._push("setPipeline", pipeline._id)

    def set_bind_group(self, index: int, bind_group, dynamic_offsets_data=(), dynamic_offsets_data_start=None,
                       dynamic_offsets_data_length=None) -> None:
        self._push("setBindGroup", int(index), bind_group._id, [int(o) for o in dynamic_offsets_data])

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        self._push("dispatch", int(x), int(y), int(z))

    def dispatch_workgroups_indirect(self, indirect_buffer, indirect_offset: int) -> None:
        self._push("dispatchIndirect", indirect_buffer._id, int(indirect_offset))

    def end(self) -> None:
        self._push("end")


# -- module-level entry point ---------------------------------------------------------------------
_default: Backend | None = None
_default_lock = threading.Lock()


def default_backend() -> Backend:
    """A process-wide backend, launched on first use and closed at exit."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Backend()
            atexit.register(_default.close)
        return _default


def enumerate_adapters() -> list[Adapter]:
    return default_backend().enumerate_adapters()
