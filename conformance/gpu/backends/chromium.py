"""WebGPU in Chromium driven by Playwright: a local headless Chromium, a Playwright server (``--browser-endpoint
ws://...``, what Playwright grids and device farms expose) or a Chrome with remote debugging (``--browser-cdp
http://...``). The object model and the page runtime are those of every browser column (``page.py``,
``page_runtime.js``); this module is only the transport: batches go to ``window.__wgpu.run`` over CDP.

Why it is built this way:

* One browser and one page per :class:`Backend`, reused for many runs: launching costs ~1.5 s.
* Playwright's sync API is tied to the thread that started it, but the suite calls the device from
  worker threads (runtime.py). So Playwright's *async* API runs on a private event-loop thread and
  every call from any thread is handed over to it, each with a timeout.
* A raw CDP Runtime.evaluate costs ~3 ms a batch where Playwright's page.evaluate took ~10.
* Bytes over 128 KiB go through the suite's page server (``served.py``), which also serves the page: 4 MiB as a
  base64 string through CDP took ~1.2 s up and ~0.3 s down, the HTTP path ~60 ms each way. The page is on
  127.0.0.1 (a secure context), so a remote browser needs a way back to it: ``CONFORMANCE_BROWSER_PAGE_HOST``
  (default 127.0.0.1; on a device farm, the address of this machine as the browser sees it).
* A page that stops answering (a shader that never ends on SwiftShader: Chromium has no watchdog
  for it there) is declared lost after ``timeout`` seconds; the GPU process (stuck in the shader) is
  killed by pid (a local browser only) so Chromium starts a fresh one, and the next ``request_device_sync``
  opens a new page.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import signal
import threading
import time

from playwright.async_api import async_playwright

from conformance.config import ADAPTER_REQUESTS
from conformance.errors import DeviceError
from conformance.gpu.backends import EXECUTABLES
from conformance.gpu.backends import enumerate_adapters as adapters_of_implementation
from conformance.gpu.backends.page import DEFAULT_TIMEOUT, Adapter, PageGone, Session, WebGPUError
from conformance.gpu.backends.page_modules import imports_generation
from conformance.gpu.backends.served import Channel, PageServer

CHROMIUM = EXECUTABLES["chromium"]
#: --enable-unsafe-webgpu: the one flag needed: without it requestAdapter() answers null on Linux.
#: --enable-features=Vulkan: Dawn's Vulkan backend; the SwiftShader adapter is offered without it too.
#: --enable-webgpu-developer-features: the full adapter.info (description "SwiftShader Device (Subzero)",
#:   driver, backend "vulkan", type "CPU"); without it only vendor/architecture are filled in.
#: --disable-gpu-process-crash-limit: we kill a hung GPU process; after the 3rd kill Chromium would
#:   give up on the GPU and requestAdapter() would answer null.
FLAGS = (
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--enable-webgpu-developer-features",
    "--disable-gpu-process-crash-limit",
)
#: What makes a headless Chromium give WebGPU the hardware Vulkan adapter. With no display its Vulkan surface set-up
#: fails and WebGPU silently falls back to SwiftShader; --disable-vulkan-surface skips that set-up. ANGLE and the
#: GPU process on native Vulkan, the GPU blocklist ignored (a server GPU is on no allow list), and no GPU sandbox
#: (the suite runs as root in containers). On a machine without a GPU (lavapipe only) Chromium hangs with them.
GPU_FLAGS = (
    "--use-angle=vulkan",
    "--use-vulkan=native",
    "--ignore-gpu-blocklist",
    "--disable-vulkan-surface",
    "--disable-gpu-sandbox",
)
#: SwiftShader, whatever the machine has.
SOFTWARE_FLAGS = ("--use-webgpu-adapter=swiftshader",)


def hardware_vulkan_adapter() -> str | None:
    """The name of a hardware (discrete or integrated) Vulkan adapter on this machine, or None: what decides
    ``auto``. wgpu-native enumerates the Vulkan drivers; lavapipe is a CPU adapter, not one."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences Mesa's warning on headless machines
    try:
        adapters = adapters_of_implementation("wgpu")
    except DeviceError:
        return None
    return next(
        (
            a.info.get("device")
            for a in adapters
            if a.info.get("backend_type") == "Vulkan" and a.info.get("adapter_type") in ("DiscreteGPU", "IntegratedGPU")
        ),
        None,
    )


def resolve_adapter_request(request: str, find_gpu=hardware_vulkan_adapter) -> str:
    """``gpu`` or ``software`` for a ``--webgpu-adapter`` value (``auto`` looks for a hardware adapter)."""
    if request not in ADAPTER_REQUESTS:
        raise DeviceError(f"--webgpu-adapter {request!r}: expected one of {', '.join(ADAPTER_REQUESTS)}")
    if request != "auto":
        return request
    return "gpu" if find_gpu() else "software"


def adapter_request_for(
    request: str, *, endpoint: str | None, cdp: str | None, find_gpu=hardware_vulkan_adapter
) -> str | None:
    """The adapter request a browser is launched with: resolved here for one the suite launches; for a Playwright
    server's, only an explicit one (the server's machine is not this one to look at); none for a Chrome reached
    over CDP (it was launched already). None: the report says what the page saw, and nothing else."""
    resolved = resolve_adapter_request(request, find_gpu if not (endpoint or cdp) else lambda: None)
    if cdp or (endpoint and request == "auto"):
        return None
    return resolved


def launch_flags(resolved: str) -> tuple[str, ...]:
    """Chromium's flags for a resolved adapter request (``gpu`` or ``software``)."""
    return FLAGS + (GPU_FLAGS if resolved == "gpu" else SOFTWARE_FLAGS)


def remote_launch_options(flags) -> dict:
    """What a Playwright server is asked to launch: headless, with the WebGPU flags (a server honours ``args`` and
    ``executablePath`` only when started with ``--unsafe``; a device farm's own set-up may enable WebGPU instead),
    and ``CONFORMANCE_BROWSER_REMOTE_EXECUTABLE`` as the browser where set (a server without a bundled browser)."""
    options = {"headless": True, "args": list(flags)}
    if os.environ.get("CONFORMANCE_BROWSER_REMOTE_EXECUTABLE"):
        options["executablePath"] = os.environ["CONFORMANCE_BROWSER_REMOTE_EXECUTABLE"]
    return options


class CdpTransport(Channel):
    """A Playwright-driven page: batches through CDP's Runtime.evaluate, blobs through the page server."""

    def __init__(self, backend: "Backend", page, cdp, client):
        super().__init__(client, backend.timeout)
        self.backend, self.page, self.cdp = backend, page, cdp

    def send(self, cmds: list, uploads: list, inline_limit: int) -> dict:
        expression = f"window.__wgpu.run({json.dumps(cmds)}, {json.dumps(uploads)}, {inline_limit})"
        try:
            reply = self.backend._call(
                self.cdp.send(
                    "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
                ),
                self.backend.timeout,
            )
        except TimeoutError:
            raise
        except Exception as exc:  # page crashed, browser gone, or the runtime itself threw
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if "closed" in text.lower() or "crash" in text.lower() or "disconnected" in text.lower():
                raise PageGone(text) from None
            raise WebGPUError(f"page runtime failed: {text}") from None
        if "exceptionDetails" in reply:  # the runtime itself threw (a bug here, not a WebGPU error)
            details = reply["exceptionDetails"]
            raise WebGPUError(
                "page runtime failed: " + details.get("exception", {}).get("description", details["text"])
            )
        return reply["result"].get("value")


class Backend:
    """One Chromium with one page (replaced when lost); ``enumerate_adapters()`` and ``close()``.

    ``endpoint``: a Playwright server's ``ws://`` URL (``npx playwright run-server``) to connect to instead of
    launching; ``cdp``: the ``http://`` URL of a Chrome started with ``--remote-debugging-port``.
    """

    def __init__(
        self,
        *,
        timeout: float | None = None,
        flags=None,
        executable_path: str = CHROMIUM,
        encoder_timestamps: bool = False,
        endpoint: str | None = None,
        cdp: str | None = None,
        adapter_request: str = "auto",
    ):
        """Launch or connect (``launch_seconds`` says how long it took).

        ``timeout``: seconds a batch may take before the page counts as lost (default
        ``CONFORMANCE_BROWSER_TIMEOUT`` or 25). ``encoder_timestamps``: list "timestamp-query-inside-encoders"
        in device features when Chromium's GPUCommandEncoder.writeTimestamp works (a probe at device creation;
        it does in Chromium 156). Off by default: the suite's timing.py calls wgpu-native's
        ``extras.write_timestamp``, which asserts a wgpu-native encoder; only a caller that uses
        ``encoder.write_timestamp`` should turn it on. ``adapter_request``: ``--webgpu-adapter`` (ADAPTER_REQUESTS);
        ``flags``, where given, replace the flags it chooses. A Chrome reached over CDP was launched by someone
        else: nothing is asked of it, and the report says what its page saw."""
        self.encoder_timestamps = encoder_timestamps
        self.timeout = float(timeout or os.environ.get("CONFORMANCE_BROWSER_TIMEOUT") or DEFAULT_TIMEOUT)
        self.endpoint, self.cdp_url = endpoint, cdp
        #: What was asked for, resolved: "gpu" or "software" (None: a browser launched by someone else, or flags
        #: given by the caller). A "gpu" run whose page offers a CPU adapter is a software fallback, said so.
        self.adapter_request = (
            None if flags is not None else adapter_request_for(adapter_request, endpoint=endpoint, cdp=cdp)
        )
        self.flags = (
            tuple(flags) if flags is not None else launch_flags(self.adapter_request) if self.adapter_request else FLAGS
        )
        self.executable_path = executable_path
        self.local = not endpoint and not cdp  # only a browser of this machine has GPU processes we can kill
        self.recovery = (
            "its GPU process was killed and the page closed, a new device gets a fresh page"
            if self.local
            else "the page was closed, a new device gets a fresh page"
        )
        self.server = PageServer(os.environ.get("CONFORMANCE_BROWSER_PAGE_HOST") or "127.0.0.1", timeout=self.timeout)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="webgpu-browser", daemon=True)
        self._thread.start()
        self._lock = threading.RLock()
        self._session: Session | None = None
        self._imports = 0  # the page server's import map generation when the page was loaded
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

    @property
    def engine(self) -> str:
        return f"Chromium {self.version}"

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
        if self.endpoint:
            self._browser = await self._pw.chromium.connect(
                self.endpoint, headers={"x-playwright-launch-options": json.dumps(remote_launch_options(self.flags))}
            )
        elif self.cdp_url:
            self._browser = await self._pw.chromium.connect_over_cdp(self.cdp_url)
        else:
            self._browser = await self._pw.chromium.launch(
                executable_path=self.executable_path,
                headless=True,
                args=list(self.flags),
                env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")},
            )
        self._cdp = await self._browser.new_browser_cdp_session() if self.local or self.cdp_url else None
        self.version = self._browser.version

    async def _new_page(self, client):
        """A page on our server, and a raw CDP session to it (the command channel)."""
        context = self._browser.contexts[0] if self.cdp_url and self._browser.contexts else None
        page = await (context.new_page() if context else self._browser.new_page())
        await page.goto(self.server.url_of(client, "driven"))
        await page.wait_for_function("window.__wgpu !== undefined")
        return page, await page.context.new_cdp_session(page)

    async def _gpu_pids(self) -> list[int]:
        info = await self._cdp.send("SystemInfo.getProcessInfo")
        return [p["id"] for p in info["processInfo"] if p["type"] == "GPU"]

    def session(self) -> Session:
        """The live page, opening a fresh one if the last was lost."""
        with self._lock:
            if self.closed:
                raise WebGPUError("the browser backend is closed")
            if self._session is not None and not self._session.lost and self._imports != imports_generation():
                # an implementation registered page imports after this page loaded: a fresh page has them
                self._session.lose("the page was loaded before an implementation added to its import map")
                try:
                    self._call(self._session.transport.page.close(run_before_unload=False), 10)
                except Exception:  # noqa: BLE001 -- a page that will not close is left to the browser
                    pass
            if self._session is None or self._session.lost:
                client = self.server.client()
                self._imports = imports_generation()
                try:
                    page, cdp = self._call(self._new_page(client), 30)
                except Exception:  # the browser itself is unusable: start another one
                    self._relaunch()
                    page, cdp = self._call(self._new_page(client), 30)
                self._session = Session(self, CdpTransport(self, page, cdp, client))
            return self._session

    def recover(self, session: Session) -> None:
        """After a timeout: kill the GPU process (stuck in a shader) by pid, close the page."""
        with self._lock:
            if self.local:
                try:
                    for pid in self._call(self._gpu_pids(), 10):
                        os.kill(pid, signal.SIGKILL)
                        self.gpu_kills += 1
                except Exception:
                    self._relaunch()
                    return
            try:
                self._call(session.transport.page.close(run_before_unload=False), 10)
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

    def enumerate_adapters(self) -> list[Adapter]:
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


# -- module-level entry point ---------------------------------------------------------------------
_default: Backend | None = None
_default_lock = threading.Lock()


def default_backend() -> Backend:
    """A process-wide backend, launched (or connected: ``CONFORMANCE_BROWSER_ENDPOINT``, ``CONFORMANCE_BROWSER_CDP``)
    on first use and closed at exit."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Backend(
                endpoint=os.environ.get("CONFORMANCE_BROWSER_ENDPOINT") or None,
                cdp=os.environ.get("CONFORMANCE_BROWSER_CDP") or None,
                adapter_request=os.environ.get("CONFORMANCE_WEBGPU_ADAPTER") or "auto",
            )
            atexit.register(_default.close)
        return _default


def enumerate_adapters() -> list[Adapter]:
    return default_backend().enumerate_adapters()
