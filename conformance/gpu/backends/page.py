"""WebGPU in a browser page, presented through the wgpu-py object subset the suite uses (see backends/__init__.py),
whatever carries the commands to the page.

One page runtime (``page_runtime.js``: an object table keyed by ids allocated here, and a batch runner) serves
every browser column; only the *transport* differs: Chromium driven by Playwright over CDP (``chromium.py``), or a
page that polls our server over HTTP and posts its answers (``served.py``: any browser, Firefox included).

Why it is built this way:

* Round trips are the cost (~3 ms a raw CDP Runtime.evaluate, ~1 ms an HTTP poll on 127.0.0.1): proxies only
  *record* commands ([op, device id, args...]); a batch goes to the page only when a result is needed
  (compile and pipeline checks, map_sync, read_buffer).
* Bytes: up to 128 KiB ride inline as base64; larger ones go through the server as blobs (GET to upload,
  POST of a *Blob* to download; a POSTed Uint8Array crawled at ~5 MB/s in Chromium).
* A page is untrusted (a served page may be any browser on the network): every answer is checked
  (:func:`check_answer`, and each result where it is used: byte counts, types) before anything reads it; a
  malformed one loses that page's session (its column's case fails with why), nothing else.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
import threading
import weakref
from pathlib import Path

DEFAULT_TIMEOUT = 25.0  # seconds one batch may take before the page is declared lost
INLINE_LIMIT = 128 * 1024  # bytes sent inline as base64; larger ones go through the HTTP server
INLINE_LIMIT_DOWN = 128 * 1024  # the same for bytes coming back
MAX_BATCH = 4096  # commands queued before a flush is forced (bounds memory when nothing reads)
MAX_ERRORS = 1024  # errors one answer may carry
MAX_MESSAGE = 8000  # characters kept of one error message from the page
RUNTIME_JS = (Path(__file__).with_name("page_runtime.js")).read_text()


class WebGPUError(RuntimeError):
    """An error reported by the browser's WebGPU implementation (message text is the browser's)."""


class ValidationError(WebGPUError):
    pass


class OutOfMemoryError(WebGPUError):
    pass


class DeviceLostError(WebGPUError):
    pass


class PageGone(Exception):
    """Raised by a transport: the page went away (closed, crashed, reloaded); the text says which."""


class MalformedAnswer(WebGPUError):
    """The page answered something that is not a well-formed result of what it was sent."""


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


# -- what a page may answer ------------------------------------------------------------------------
def _need(ok: bool, what: str) -> None:
    if not ok:
        raise MalformedAnswer(f"the page sent a malformed answer: {what}")


def check_answer(answer, count: int) -> dict:
    """``answer`` when it is a well-formed reply to a batch of ``count`` commands, else :class:`MalformedAnswer`.

    ``{"results": {"<index>": value}, "errors": [{"index", "op", "kind", "message"}], "lost": {"<dev>": text}}``.
    """
    _need(isinstance(answer, dict), f"expected an object, got {type(answer).__name__}")
    results, errors, lost = answer.get("results"), answer.get("errors"), answer.get("lost")
    _need(isinstance(results, dict), "results: expected an object")
    _need(
        all(isinstance(k, str) and k.isdigit() and int(k) < count for k in results),
        f"results: keys must be indices of the {count} commands sent",
    )
    _need(isinstance(errors, list) and len(errors) <= MAX_ERRORS, f"errors: expected a list of at most {MAX_ERRORS}")
    for e in errors:
        _need(
            isinstance(e, dict)
            and isinstance(e.get("index"), int)
            and not isinstance(e.get("index"), bool)
            and -1 <= e["index"] < count
            and all(isinstance(e.get(k), str) for k in ("op", "kind", "message")),
            "errors: each must be {index: a command index or -1, op, kind, message: strings}",
        )
        e["message"] = e["message"][:MAX_MESSAGE]
    _need(
        isinstance(lost, dict)
        and all(isinstance(k, str) and k.isdigit() and isinstance(v, str) for k, v in lost.items()),
        "lost: expected {device id: text}",
    )
    return answer


def result_of(value, kind: type | tuple, what: str):
    """``value`` when it is of ``kind`` (a result used by the object model), else :class:`MalformedAnswer`."""
    _need(
        isinstance(value, kind) and not isinstance(value, bool) or kind is bool and isinstance(value, bool),
        f"{what}: expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}",
    )
    return value


def _limits(raw, what: str) -> dict:
    result_of(raw, dict, what)
    _need(
        all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in raw.items()),
        f"{what}: expected {{name: non-negative integer}}",
    )
    return raw


def _strings(raw, what: str) -> list:
    _need(
        isinstance(raw, list) and len(raw) <= 256 and all(isinstance(s, str) and len(s) <= 200 for s in raw),
        f"{what}: expected a list of names",
    )
    return raw


# -- one page ---------------------------------------------------------------------------------------
class Session:
    """One page: the command queue, id allocation, batches and their errors, over a transport.

    The transport (``chromium.CdpTransport``, ``served.PageClient``) offers ``send(cmds, uploads, inline_limit)``
    (the page's raw answer; ``TimeoutError`` after ``timeout`` seconds, :class:`PageGone` when the page went away),
    ``put_blob(data) -> name``, ``take_blob(name) -> bytes | None`` and ``drop_blob(name)``. After a timeout the
    backend's ``recover(session)`` gets the browser going again.
    """

    def __init__(self, backend, transport):
        self.backend, self.transport = backend, transport
        self.ids = itertools.count(1)
        self.cmds: list = []
        self.uploads: list[str] = []
        self.drops: list[int] = []
        self.lost: str | None = None
        self.dev_lost: dict[int, str] = {}
        self._queue_lock = threading.Lock()  # held briefly: pushing never waits for a flush
        self._flush_lock = threading.Lock()  # one batch in flight per page
        self.batches = 0

    def new_id(self) -> int:
        return next(self.ids)

    def check(self, dev_id: int = 0) -> None:
        if self.lost:
            raise DeviceLostError(self.lost)
        if dev_id in self.dev_lost:
            raise DeviceLostError(self.dev_lost[dev_id])

    def data_ref(self, data: bytes) -> dict:
        """Inline base64 for small data, else a blob the page fetches from our server."""
        if len(data) <= INLINE_LIMIT:
            return {"b64": base64.b64encode(data).decode("ascii")}
        token = self.transport.put_blob(data)
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

    def _send(self, cmds: list, uploads: list) -> dict:
        """The page's checked answer to one batch; a page that is gone, silent or malformed loses the session."""
        timeout = self.backend.timeout
        try:
            answer = self.transport.send(cmds, uploads, INLINE_LIMIT_DOWN)
        except TimeoutError:
            self.lose(
                f"device lost: the page did not answer within {timeout:g} s (a shader that never ends?); "
                f"{self.backend.recovery}"
            )
            self.backend.recover(self)
            raise DeviceLostError(self.lost) from None
        except PageGone as exc:
            self.lose(f"device lost: the page is gone ({exc})")
            raise DeviceLostError(self.lost) from None
        except MalformedAnswer as exc:  # the transport's own check (the page's runtime threw, say)
            self.lose(f"device lost: {exc}")
            raise DeviceLostError(self.lost) from None
        finally:
            for token in uploads:
                self.transport.drop_blob(token)
        try:
            return check_answer(answer, len(cmds))
        except MalformedAnswer as exc:
            self.lose(f"device lost: {exc}")
            raise DeviceLostError(self.lost) from None

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
        answer = self._send(cmds, uploads)
        for dev, text in answer["lost"].items():
            self.dev_lost[int(dev)] = f"device lost ({text[:MAX_MESSAGE]})"
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
            cls = (
                OutOfMemoryError
                if "out of memory" in kinds
                else ValidationError
                if ("validation error" in kinds)
                else WebGPUError
            )
            raise cls(msg)
        if answer["lost"]:
            raise DeviceLostError("\n".join(self.dev_lost[int(d)] for d in answer["lost"]))
        return answer["results"], own

    def bytes_of(self, ref, size: int) -> bytes:
        """The ``size`` bytes a read answered with (inline or a blob); anything else loses the session."""
        try:
            return self._bytes_of(ref, size)
        except MalformedAnswer as exc:
            self.lose(f"device lost: {exc}")
            raise DeviceLostError(self.lost) from None

    def _bytes_of(self, ref, size: int) -> bytes:
        _need(
            isinstance(ref, dict) and (isinstance(ref.get("b64"), str) or isinstance(ref.get("blob"), str)),
            "a read's result must be {b64: text} or {blob: name}",
        )
        if "b64" in ref:
            _need(len(ref["b64"]) <= 4 * (size // 3 + 1), f"a read of {size} bytes answered with more")
            try:
                data = base64.b64decode(ref["b64"], validate=True)
            except (binascii.Error, ValueError):
                raise MalformedAnswer("the page sent a malformed answer: a read's base64 does not decode") from None
        else:
            data = self.transport.take_blob(ref["blob"])
            _need(data is not None, f"a read names blob {ref['blob'][:80]!r}, which the page never posted")
        _need(len(data) == size, f"a read of {size} bytes answered with {len(data)}")
        return data

    def lose(self, message: str) -> None:
        self.lost = self.lost or message
        with self._queue_lock:
            for token in self.uploads:
                self.transport.drop_blob(token)
            self.cmds, self.uploads = [], []


def _where(ops: str) -> str:
    """Which calls an error scope covered: one call, or the batch of calls recorded since the last check."""
    names = list(dict.fromkeys(ops.split(",")))
    return f"in {names[0]}" if len(names) == 1 else f"in a batch of recorded calls ({', '.join(names)})"


def _messages(raw) -> list:
    """A shader's compilation messages as the page sent them, checked: [{type, message, line, col}]."""
    raw = [] if raw is None else raw
    _need(
        isinstance(raw, list)
        and len(raw) <= MAX_ERRORS
        and all(
            isinstance(m, dict)
            and isinstance(m.get("type"), str)
            and isinstance(m.get("message"), str)
            and isinstance(m.get("line"), int)
            and isinstance(m.get("col"), int)
            for m in raw
        ),
        "createShaderModule: expected a list of {type, message, line, col}",
    )
    return [{**m, "message": m["message"][:MAX_MESSAGE]} for m in raw]


class _Obj:
    """A proxy: an id in its page's object table; the JS object is dropped when the proxy dies."""

    def __init__(self, session: Session, label=""):
        self._session, self._id, self.label = session, session.new_id(), label or ""
        weakref.finalize(self, session._drop, self._id)


# -- adapter and device ---------------------------------------------------------------------------
_TYPES = {"cpu": "CPU", "discrete gpu": "DiscreteGPU", "integrated gpu": "IntegratedGPU", "virtual gpu": "VirtualGPU"}


def adapter_name(raw: dict) -> str:
    """An adapter as a page's ``adapter.info`` names it: its description, device or architecture (with the vendor
    where that says more), else what kind of adapter it is."""
    name = raw.get("description") or raw.get("device") or raw.get("architecture")
    if not name:
        return "fallback adapter" if raw.get("isFallbackAdapter") else "WebGPU adapter"
    vendor = raw.get("vendor")
    return f"{name} ({vendor})" if vendor and not raw.get("description") and vendor not in name else str(name)


class Adapter:
    """The page's adapter, described by ``adapter.info`` (developer features give the full info)."""

    def __init__(self, backend, got):
        """``backend``: a browser backend (``session()``, ``engine``: "Chromium 156", "Firefox 153.8.0esr")."""
        self._backend = backend
        result_of(got, dict, "adapterInfo")
        raw = {
            k: v
            for k, v in result_of(got.get("info"), dict, "adapterInfo.info").items()
            if isinstance(v, (str, int, float, bool)) and len(str(v)) <= 500
        }
        self.raw_info, self.user_agent = raw, str(result_of(got.get("userAgent"), str, "adapterInfo.userAgent"))[:500]
        self.wgsl_language_features = set(_strings(got.get("wgsl"), "adapterInfo.wgsl"))
        kind = _TYPES.get(str(raw.get("type", "")).lower(), "CPU" if raw.get("isFallbackAdapter") else "Unknown")
        api = str(raw.get("backend", "")).capitalize().replace("Opengl", "OpenGL").replace("D3d12", "D3D12") or getattr(
            backend, "api", ""
        )  # Firefox fills in no adapter.info: its column pins the backend instead
        name = adapter_name(raw)
        self.info = {
            "device": name,
            "adapter_type": kind,
            "backend_type": f"WebGPU({backend.engine})" + (f"/{api}" if api else ""),
            "description": raw.get("driver") or raw.get("description") or "",
            "vendor": raw.get("vendor", ""),
            "architecture": raw.get("architecture", ""),
            "device_id": raw.get("device", ""),
            "is_fallback_adapter": bool(raw.get("isFallbackAdapter")),
            "subgroup_min_size": raw.get("subgroupMinSize"),
            "subgroup_max_size": raw.get("subgroupMaxSize"),
            "requested": getattr(backend, "adapter_request", None),
        }
        self.limits = {kebab(k): v for k, v in _limits(got.get("limits"), "adapterInfo.limits").items()}
        self.features = set(_strings(got.get("features"), "adapterInfo.features"))

    @property
    def summary(self) -> str:
        return f"{self.info['device']} ({self.info['adapter_type']}, {self.info['backend_type']})"

    def request_device_sync(
        self, *, label: str = "", required_features=(), required_limits=None, default_queue=None
    ) -> "Device":
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
            probe = str(result_of(sess.call(["probeEncoderTimestamps", dev._id]), str, "probeEncoderTimestamps"))[:500]
            dev.encoder_timestamps = probe
            if probe == "ok" and self._backend.encoder_timestamps:
                dev.features.add("timestamp-query-inside-encoders")
        if (
            "timestamp-query-inside-encoders" in required_features
            and "timestamp-query-inside-encoders" not in dev.features
        ):
            raise WebGPUError(f"request_device refused: timestamp-query-inside-encoders: {dev.encoder_timestamps}")
        return dev


class Device(_Obj):
    """A GPUDevice in the page. ``create_*`` record; compile and pipeline checks flush and raise."""

    def _setup(self, adapter: Adapter, got: dict):
        self.adapter = adapter
        result_of(got, dict, "requestDevice")
        self.features = set(_strings(got.get("features"), "requestDevice.features"))
        self.limits = {kebab(k): v for k, v in _limits(got.get("limits"), "requestDevice.limits").items()}
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
        messages, errors = self._session.call(
            ["createShaderModule", self._id, mod._id, mod.label, code], own_errors=True
        )
        mod.compilation_messages = _messages(messages)
        diagnostics = [
            f"wgsl:{m['line']}:{m['col']} {m['type']}: {m['message']}"
            for m in mod.compilation_messages
            if m["type"] == "error"
        ]
        if diagnostics or errors:
            raise ValidationError(
                f"Shader {mod.label!r} failed to compile:\n"
                + "\n".join(diagnostics + [f"{e['kind']}: {e['message']}" for e in errors])
            )
        return mod

    def create_bind_group_layout(self, *, label: str = "", entries) -> "BindGroupLayout":
        out = []
        for e in entries:
            entry = {"binding": e["binding"], "visibility": int(e["visibility"])}
            if "buffer" in e:
                b = e["buffer"]
                entry["buffer"] = {
                    "type": str(b.get("type", "uniform")),
                    "hasDynamicOffset": bool(b.get("has_dynamic_offset", False)),
                    "minBindingSize": int(b.get("min_binding_size", 0)),
                }
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
        self._session.call(
            [
                "createComputePipeline",
                self._id,
                pipe._id,
                pipe.label,
                layout_ref,
                compute["module"]._id,
                compute.get("entry_point"),
                compute.get("constants") or {},
            ]
        )
        return pipe

    def create_bind_group(self, *, label: str = "", layout, entries) -> "BindGroup":
        out = []
        for e in entries:
            res = e["resource"]
            if not isinstance(res, dict) or "buffer" not in res:
                raise NotImplementedError("only buffer resources are supported by the browser backend")
            size = res.get("size")
            out.append(
                [e["binding"], res["buffer"]._id, int(res.get("offset", 0)), None if size is None else int(size)]
            )
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
        raw = raw[data_offset:] if size is None else raw[data_offset : data_offset + size]
        self._device._push("writeBuffer", buffer._id, int(buffer_offset), self._device._session.data_ref(raw))

    def read_buffer(self, buffer, buffer_offset: int = 0, size: int | None = None) -> bytes:
        size = buffer.size - buffer_offset if not size else size
        ref = self._device._session.call(["readBuffer", self._device._id, buffer._id, int(buffer_offset), int(size)])
        return self._device._session.bytes_of(ref, int(size))

    def on_submitted_work_done_sync(self) -> None:
        """Flush and wait until the page's queue is idle."""
        self._device._session.call(["workDone", self._device._id])


class Buffer(_Obj):
    def __init__(self, device: Device, label, size: int, usage: int):
        super().__init__(device._session, label)
        self._device, self.size, self.usage = device, int(size), int(usage)
        self._mapped = None  # (mode, offset, size) while mapped
        self._data = None  # bytes read by map_sync(READ)
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
        length = (self.size - int(offset)) if size is None else int(size)
        self._data = self._session.bytes_of(ref, length) if mode & 1 else None

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
            tw = [
                timestamp_writes["query_set"]._id,
                timestamp_writes.get("beginning_of_pass_write_index"),
                timestamp_writes.get("end_of_pass_write_index"),
            ]
        self._session.push(["beginComputePass", 0, cpass._id, self._id, cpass.label, tw])
        return cpass

    def copy_buffer_to_buffer(self, source, source_offset, destination, destination_offset, size) -> None:
        self._push(
            "copyBufferToBuffer", source._id, int(source_offset), destination._id, int(destination_offset), int(size)
        )

    def clear_buffer(self, buffer, offset: int = 0, size: int | None = None) -> None:
        self._push("clearBuffer", buffer._id, int(offset), size)

    def resolve_query_set(self, query_set, first_query, query_count, destination, destination_offset) -> None:
        self._push(
            "resolveQuerySet",
            query_set._id,
            int(first_query),
            int(query_count),
            destination._id,
            int(destination_offset),
        )

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

    def set_bind_group(
        self,
        index: int,
        bind_group,
        dynamic_offsets_data=(),
        dynamic_offsets_data_start=None,
        dynamic_offsets_data_length=None,
    ) -> None:
        self._push("setBindGroup", int(index), bind_group._id, [int(o) for o in dynamic_offsets_data])

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        self._push("dispatch", int(x), int(y), int(z))

    def dispatch_workgroups_indirect(self, indirect_buffer, indirect_offset: int) -> None:
        self._push("dispatchIndirect", indirect_buffer._id, int(indirect_offset))

    def end(self) -> None:
        self._push("end")
