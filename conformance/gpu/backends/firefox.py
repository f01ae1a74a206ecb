"""WebGPU in Firefox (wgpu inside Gecko: naga's validation behind Firefox's own IPC), as a column.

Debian's ``firefox-esr`` is launched headless with a temporary profile whose ``user.js`` turns WebGPU on, at the
suite's served page (``served.py``): the page itself polls for batches, so no driver is needed (Playwright's
Firefox support wants its own patched build). A batch that does not answer in time (a shader that never ends)
stops Firefox (its process group) and starts it again on the same page: the next device gets a fresh browser.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from conformance.gpu.backends import EXECUTABLES
from conformance.gpu.backends.page import DEFAULT_TIMEOUT, Adapter, WebGPUError
from conformance.gpu.backends.served import PageBackend, PageServer

FIREFOX = EXECUTABLES["firefox"]
#: WebGPU on (it is off in ESR), on Vulkan (Firefox fills in no adapter.info, so the column says which backend it
#: pinned), on any adapter (lavapipe is on the blocklist), and no first-run noise.
PREFS = {
    "dom.webgpu.enabled": True,
    "dom.webgpu.wgpu-backend": "vulkan",
    "gfx.webgpu.ignore-blocklist": True,
    "gfx.webgpu.force-enabled": True,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.enabled": False,
    "browser.sessionstore.resume_from_crash": False,
    "dom.max_script_run_time": 0,
    "browser.tabs.remote.autostart": True,
}
LAUNCH_TIMEOUT = 90.0  # seconds from starting Firefox to its page's first poll (a cold start here: ~5 s)


def user_js(prefs: dict = PREFS) -> str:
    def value(v):
        return "true" if v is True else "false" if v is False else str(v) if isinstance(v, int) else f'"{v}"'

    return "".join(f'user_pref("{k}", {value(v)});\n' for k, v in prefs.items())


_RUNNING: set = set()  # the Browsers whose Firefox runs, stopped on SIGTERM too


def _stop_all_then_die(signum, frame) -> None:
    """SIGTERM (a CI step cancelled, ``timeout``, a script's cleanup) ends Python without its atexit hooks, and
    Firefox runs in a session of its own: stop each Firefox, then die of the signal as before."""
    for browser in list(_RUNNING):
        browser.stop()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _stop_on_sigterm() -> None:
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _stop_all_then_die)


class Browser:
    """One headless Firefox process (and its profile directory) showing one URL; ``restart()``, ``close()``."""

    def __init__(self, url: str, executable: str = FIREFOX):
        if not shutil.which(executable):
            raise WebGPUError(f"{executable} not found: apt-get install -y firefox-esr")
        self.url, self.executable = url, executable
        self.profile: str | None = None
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self.start()

    def start(self) -> None:
        """Start on a fresh profile: one that lived through a kill would restore its tab beside the URL's, and two
        pages of one column would take it from each other."""
        self.profile = tempfile.mkdtemp(prefix="conformance-firefox-")
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            f.write(user_js())
        env = {**os.environ, "MOZ_HEADLESS": "1", "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
        self.proc = subprocess.Popen(
            [self.executable, "--headless", "--no-remote", "--profile", self.profile, self.url],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _RUNNING.add(self)
        _stop_on_sigterm()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its content and GPU processes with it
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        _RUNNING.discard(self)
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        self.start()

    def close(self) -> None:
        self.stop()


class Backend(PageBackend):
    """Firefox at a served page of its own server: the Firefox column."""

    api = "Vulkan"  # dom.webgpu.wgpu-backend

    def __init__(self, *, timeout: float | None = None, executable: str = FIREFOX):
        timeout = float(timeout or os.environ.get("CONFORMANCE_BROWSER_TIMEOUT") or DEFAULT_TIMEOUT)
        self.server = PageServer(timeout=timeout)
        client = self.server.client("firefox")
        start = time.perf_counter()
        try:
            self.browser = Browser(self.server.url_of(client), executable)
        except BaseException:
            self.server.close()
            raise
        super().__init__(client, connect_timeout=LAUNCH_TIMEOUT, relaunch=self.browser.restart)
        if not client.wait_alive(LAUNCH_TIMEOUT):
            self.close()
            raise WebGPUError(f"Firefox did not open the suite's page within {LAUNCH_TIMEOUT:g} s")
        self.launch_seconds = time.perf_counter() - start

    def close(self) -> None:
        super().close()
        self.browser.close()
        self.server.close()


_default: Backend | None = None
_default_lock = threading.Lock()


def default_backend() -> Backend:
    """A process-wide Firefox, launched on first use and stopped at exit."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Backend()
            atexit.register(_default.close)
        return _default


def enumerate_adapters() -> list[Adapter]:
    return default_backend().enumerate_adapters()
