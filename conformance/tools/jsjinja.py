"""@huggingface/jinja, the template engine of a JavaScript loader, in one long-lived Node process.

``open_engine()`` finds Node and the pinned npm package (the checkout's ``node_modules/``, or the directory named
by ``CONFORMANCE_JINJA_JS``) and starts ``jinja_js.mjs`` with the reference loader's ``"./jinja"`` entry (the
manifest functions and the render budget it counts with); requests are JSON lines over its stdin and stdout, so a
lint run pays Node's start once, however many expressions it compares.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import time
from pathlib import Path

from conformance.config import loader_entry
from conformance.errors import ConformanceError

ENGINE = "@huggingface/jinja"
SCRIPT = Path(__file__).with_name("jinja_js.mjs")
#: A directory holding @huggingface/jinja's package.json, for an installed suite with no checkout around it.
OVERRIDE = "CONFORMANCE_JINJA_JS"
#: A backstop against a hung engine (an answer for a whole package takes seconds), never a measurement.
REPLY_TIMEOUT = 300.0
NODE_HEAP_MB = 2048


class EngineUnavailable(ConformanceError):
    """Node or the npm package is missing: the check is skipped with this reason."""


class EngineFailed(ConformanceError):
    """The Node process died, hung or answered what is not JSON."""


def locate() -> tuple[Path, str]:
    """(the package's directory, its version), or EngineUnavailable naming what is missing."""
    override = os.environ.get(OVERRIDE, "").strip()
    if override:
        candidates = [Path(override)]
    else:
        here = Path(__file__).resolve()
        candidates = [d / "node_modules" / "@huggingface" / "jinja" for d in (Path.cwd(), *here.parents)]
    for directory in candidates:
        manifest = directory / "package.json"
        if manifest.is_file():
            try:
                meta = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise EngineUnavailable(f"{manifest}: not a readable package.json ({err})") from None
            if meta.get("name") != ENGINE:
                raise EngineUnavailable(f"{manifest}: is {meta.get('name')!r}, not {ENGINE}")
            return directory, str(meta.get("version", "?"))
    where = (
        f"{OVERRIDE}={override}"
        if override
        else f"node_modules/ (run `npm ci` in the checkout, or set {OVERRIDE} to the package's directory)"
    )
    raise EngineUnavailable(f"no {ENGINE} in {where}")


def _entry(directory: Path) -> Path:
    meta = json.loads((directory / "package.json").read_text(encoding="utf-8"))
    exports = meta.get("exports", {}).get(".", {})
    module = exports.get("import") if isinstance(exports, dict) else None
    return (directory / (module or meta.get("module") or "dist/index.js")).resolve()


class JsJinja:
    """One Node process running ``jinja_js.mjs``; ``request(payload)`` is one round trip."""

    def __init__(self, directory: Path, version: str, node: str):
        self.version = version
        self.label = f"{ENGINE} {version}"
        self._command = [
            node,
            f"--max-old-space-size={NODE_HEAP_MB}",
            str(SCRIPT),
            _entry(directory).as_uri(),
            loader_entry("./jinja").as_uri(),
        ]
        self._start()

    def _start(self) -> None:
        self._owner = os.getpid()  # a forked worker (cases.workers) starts its own Node process: never shares one
        self._proc = subprocess.Popen(
            self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def request(self, payload: dict) -> list:
        """The answer's results; EngineFailed if the process dies or hangs (the next request starts a new one, so
        one package that breaks the engine costs only its own check)."""
        if self._owner != os.getpid() or self._proc.poll() is not None:
            self._start()
        line = (json.dumps(payload, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            self._proc.stdin.write(line)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise EngineFailed(f"{ENGINE}: the Node process has exited: {self._stderr()}") from None
        reply = self._read_line()
        try:
            answer = json.loads(reply)
        except ValueError:
            raise EngineFailed(f"{ENGINE}: not a JSON answer: {reply[:200]!r}") from None
        if "error" in answer:
            raise EngineFailed(f"{ENGINE}: the request failed: {answer['error']}")
        return answer["results"]

    def _read_line(self) -> bytes:
        out, fd, deadline = bytearray(), self._proc.stdout.fileno(), time.monotonic() + REPLY_TIMEOUT
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while not out.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self._proc.kill()
                    self.close()
                    raise EngineFailed(f"{ENGINE}: no answer within {REPLY_TIMEOUT:g} s")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EngineFailed(f"{ENGINE}: the Node process has exited: {self._stderr()}")
                out += chunk
        return bytes(out)

    def _stderr(self) -> str:
        self.close()
        return (self._proc.stderr.read() or b"").decode("utf-8", "replace").strip()[-2000:] or "no message"

    def close(self) -> None:
        if self._owner == os.getpid() and self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_engine() -> JsJinja:
    """A running engine, or EngineUnavailable saying why there is none (``skipped: ...`` in lint)."""
    node = shutil.which("node")
    if node is None:
        raise EngineUnavailable("no node on PATH")
    directory, version = locate()
    return JsJinja(directory, version, node)
