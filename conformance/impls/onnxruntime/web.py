"""ONNX Runtime Web inside a browser page, as implementations under test: where web users run ORT's kernels.

``onnxruntime-web`` runs the C++ WebGPU execution provider compiled to WebAssembly (``ort.webgpu.min.mjs``,
``WebGpuExecutionProvider``); ``onnxruntime-web-jsep`` runs JSEP, the TypeScript kernels (``ort.min.mjs``,
``JsExecutionProvider``). Both go through the one page runtime of the browser columns (``--webgpu=chromium``:
Playwright's Chromium; ``--webgpu=firefox`` or ``page:<id>``: a served page), which loads ``page_ort.mjs``
(beside this module) and ORT Web's files from the suite's server (the pinned npm package in ``node_modules/``),
one thread, no cross-origin isolation. Both are registered with the page server when this module is imported:
the page module as ``ort``, ORT Web's ``dist/`` under ``ort/``.

The models are the native provider's (:func:`conformance.impls.onnxruntime.models.mapped_model`: one node of the op
record's ``OrtMapping``, unknown dimensions), one session per (op, dtypes, attributes) kept in the page. A session
is made with CPU fallback disabled and must place every node on the provider under test (ORT's verbose session
log names each node's provider); one that does not is a failure saying so, never a pass or a rejection.
Each verdict carries what the case cost (``impl``: session and run milliseconds in the page, round trips) and the
page's console warnings and errors that came with its result.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import time
from pathlib import Path

import numpy as np

from conformance.certify.implementations import ImplResult, Rejected
from conformance.errors import ConformanceError
from conformance.files import MAX_DATA_FILE, read_confined
from conformance.gpu.backends.page import WebGPUError
from conformance.gpu.backends.page_modules import MIME, RouteRefused, register
from conformance.impls.in_page import InPage, PageUnavailable, adapter_fields, not_installed
from conformance.impls.onnxruntime.models import mapped_model, model_inputs
from conformance.impls.onnxruntime.native import ort_op_type, session_key
from conformance.impls.onnxruntime.web_repro import repro_files
from conformance.ops import record_for

#: What ORT says when a node would need the CPU provider and fallback is disabled ("... has been explicitly
#: disabled by the user"), or when a node its optimizer made (Gelu decomposed to Mul...) was placed on none.
FALLBACK = re.compile(r"fallback to CPU EP has been explicitly disabled|Provider type for \w+ node .* is not set")
_INSTANCES = itertools.count(1)
#: Terminal colours ORT's log puts around its errors.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: JavaScript typed arrays the page builds tensors with (ORT Web's element types).
WEB_DTYPES = ("float32", "float16", "int32", "int64", "uint8", "int8", "bool", "float64")
#: Files of the pinned npm package ``onnxruntime-web`` (``dist/``) the server hands out under ``ort/``: its
#: JavaScript and WebAssembly only, so that a page runs ONNX Runtime Web from 127.0.0.1 and fetches nothing else.
ORT_FILE = re.compile(r"ort[a-z0-9.-]*\.(mjs|wasm)\Z")


class ProviderFallback(ConformanceError):
    """A node of the model was not placed on the provider under test (the CPU took it): a failure."""


class OrtWeb(InPage):
    """ONNX Runtime Web's C++ WebGPU provider (``ort.webgpu.min.mjs``) in the browser of ``--webgpu``."""

    name = "onnxruntime-web"
    runs_what = "ONNX Runtime Web"
    flavor = "webgpu"  # page_ort.mjs FLAVORS
    bundle = "ort.webgpu.min.mjs"
    provider = "WebGpuExecutionProvider"
    #: Sessions kept alive in the page at once (None: every session of the package being run). One: with several
    #: alive this provider hangs where one alone does not (docs/findings/onnxruntime-web.md, finding 8), so a case
    #: runs beside no earlier case's session.
    live_sessions: int | None = 1
    has_variants = False

    def __init__(self, device: str = "auto", adapter: str | None = None, webgpu: str = "chromium"):
        self.webgpu = webgpu  # wgpu or dawn: available() says it needs a browser
        self._page = None  # the page Session the state below belongs to
        self._backend = None  # the browser backend that page is of
        self._sessions: dict[tuple, dict] = {}
        self._ops: dict[str, str] = {}
        self._adapter: dict | None = None
        self.version: str | None = None
        self.device_features: frozenset | None = None
        self._prefix = f"{self.flavor}{next(_INSTANCES)}"
        self._names = itertools.count(1)

    # -- Implementation ------------------------------------------------------------------------
    def available(self) -> str | None:
        if ort_dist() is None:
            return not_installed(self, "ONNX Runtime Web", f"onnxruntime-web/dist/{self.bundle}", "CONFORMANCE_ORT_WEB")
        return super().available()

    def prepare(self, package) -> None:
        self._ops[package.name] = ort_op_type(self.name, package)
        self._release_sessions(keep=package.name)

    def _release_sessions(self, keep: str | None = None) -> None:
        """Release the sessions this implementation holds in the page, but those of package ``keep``: a page
        holding every session of a run ties up GPU memory that later sessions need. An entry that records an error
        stays, its page session released, so that call is not attempted again."""
        names = []
        for key, entry in list(self._sessions.items()):
            if key[0] == keep:
                continue
            if "name" in entry:
                names.append(entry.pop("name"))
            if "error" not in entry:
                del self._sessions[key]
        if names and self._page is not None and not self._page.lost:
            self.call(self._page, ["ortRelease", 0, names])

    def describe(self) -> dict:
        return {
            "implementation": self.name,
            "provider": self.provider,
            "onnxruntime-web": self.version,
            "bundle": self.bundle,
            "browser": self.engine(self._backend),
            **adapter_fields(self._adapter),
            "features": sorted(self.device_features or ()),
        }

    def run(self, case, inputs) -> ImplResult:
        mapping = record_for(case.package).ort
        present, dtypes = model_inputs(self.name, mapping, inputs, WEB_DTYPES, "ONNX Runtime Web tensor type")
        attributes = dict(case.attributes)
        page = self.ensure_page()
        key = session_key(case.package, dtypes, attributes)
        made = self._session(page, key, mapping, dtypes, attributes)
        reused = made.get("reused", False)
        report = {
            "provider": self.provider,
            "placements": made["placements"],
            "session_ms": 0.0 if reused else made["ms"],
            "session_reused": reused,
        }
        made["reused"] = True
        before = page.batches
        start = time.perf_counter()
        feeds = {r: [inputs[r].dtype.name, list(inputs[r].shape), page.data_ref(inputs[r].tobytes())] for r in present}
        got = self.call(page, ["ortRun", 0, made["name"], feeds])
        report.update(
            run_ms=_ms(got, "ms"),
            round_trips=page.batches - before,
            wall_ms=round((time.perf_counter() - start) * 1000, 3),
        )
        _console(report, None if reused else made.get("console"), got)
        if not isinstance(got, dict) or ("error" not in got and not isinstance(got.get("outputs"), dict)):
            raise PageUnavailable(f"{self.name}: the page answered ortRun with {str(got)[:200]}")
        if got.get("trapped"):  # the page dropped that instance and its sessions; they are made again
            self._sessions.clear()
            report["trapped"] = True
            raise Rejected(
                f"{self.name}: {mapping.op_type} refused the call at run time: its WebAssembly instance "
                f"trapped ({got.get('error')}); ONNX Runtime Web is loaded afresh for the next call",
                reason="runtime",
                report=report,
            )
        if "error" in got:
            raise Rejected(
                f"{self.name}: {mapping.op_type} refused the call at run time: {got['error']}",
                reason="runtime",
                report=report,
            )
        outputs = {}
        for role in mapping.outputs:
            entry = got["outputs"].get(role)
            if entry is None:
                continue
            dtype, dims, ref = entry
            np_dtype = np.dtype("bool" if dtype == "bool" else dtype)
            size = math.prod(dims) * np_dtype.itemsize
            try:
                data = page.bytes_of(ref, size)
            except WebGPUError as exc:
                raise PageUnavailable(f"{self.name}: reading {role}: {exc}") from None
            outputs[role] = np.frombuffer(data, dtype=np_dtype).reshape(dims).copy()
        return ImplResult(outputs, extra={"providers": [self.provider], "report": report})

    # -- the page --------------------------------------------------------------------------------
    def ensure_page(self):
        """The live page Session with ORT Web loaded; a fresh page (after a loss) starts with no sessions."""
        backend, page = self.page()
        if page is self._page:
            return page
        self._sessions.clear()
        self._adapter = self.call(page, ["adapterInfo", 0])
        features = self._adapter.get("features") if isinstance(self._adapter, dict) else None
        self.device_features = (
            frozenset(f for f in features if isinstance(f, str)) if isinstance(features, list) else frozenset()
        )
        self.call(page, ["extend", 0, "ort"])
        loaded = self.call(page, ["ortLoad", 0, self.flavor])
        if not isinstance(loaded, dict) or "error" in loaded:
            raise PageUnavailable(
                f"the page could not load ONNX Runtime Web ({self.bundle}): "
                f"{loaded.get('error') if isinstance(loaded, dict) else loaded}"
            )
        self.version = loaded.get("version")
        self._backend, self._page = backend, page
        return page

    def _session(self, page, key, mapping, dtypes: dict, attributes: dict) -> dict:
        """The page's session for ``key``, made once; raises what making it said (each time it is asked)."""
        if key not in self._sessions:
            live = sum("name" in entry for entry in self._sessions.values())
            if self.live_sessions is not None and live >= self.live_sessions:
                self._release_sessions()
            name = f"{self._prefix}-{next(self._names)}"  # unique in the page: several implementations share it
            shown = ", ".join(f"{r} {d}" for r, d in dtypes.items() if d)
            try:
                model = mapped_model(mapping, dtypes, attributes or None).SerializeToString()
            except Exception as exc:  # noqa: BLE001 -- onnx's own errors: the model cannot be written
                self._sessions[key] = {
                    "error": Rejected(
                        f"{self.name}: no model for {mapping.op_type} with {shown}: {exc}", reason="model"
                    )
                }
                return self._raise(key)
            got = self.call(page, ["ortSession", 0, self.flavor, name, page.data_ref(model)])
            if not isinstance(got, dict):
                raise PageUnavailable(f"{self.name}: the page answered ortSession with {str(got)[:200]}")
            placements = got.get("placements") if isinstance(got.get("placements"), dict) else {}
            entry = {"name": name, "placements": placements, "ms": _ms(got, "ms"), "console": got.get("console")}
            others = {p: n for p, n in placements.items() if p != self.provider}
            if "error" in got and FALLBACK.search(str(got["error"])):
                entry["error"] = ProviderFallback(
                    f"{self.name}: {mapping.op_type} with {shown}: a node of the model is not taken by "
                    f"{self.provider} and would run on the CPU (fallback disabled, so the session failed): "
                    f"{got['error']}"
                )
            elif "error" in got:
                entry["error"] = Rejected(
                    f"{self.name}: no session for {mapping.op_type} with {shown}: {got['error']}", reason="model"
                )
            elif others or not placements:
                placed = ", ".join(f"{n} on {p}" for p, n in placements.items()) or "no placement logged"
                entry["error"] = ProviderFallback(
                    f"{self.name}: {mapping.op_type} with {shown}: the session "
                    f"placed nodes off {self.provider} ({placed})"
                )
            self._sessions[key] = entry
        return self._raise(key)

    def _raise(self, key) -> dict:
        entry = self._sessions[key]
        if "error" in entry:
            raise entry["error"]
        return entry

    # -- standalone repro (conformance.certify.repro.collect) --------------------------------------------
    def repro_files(self, failure) -> dict[str, bytes]:
        """An HTML page running the failing call with ONNX Runtime Web alone, its model and its data.

        ``index.html`` loads ORT Web from ``./ort/`` beside it, or from ``?ort=<URL of ORT Web's dist/>``; it
        shows the expected and the observed result and sets ``document.title`` to ``PASS`` or ``FAIL: ...``.
        """
        return repro_files(self, failure)


class OrtWebJsep(OrtWeb):
    """ONNX Runtime Web's JSEP provider (the TypeScript kernels of ``ort.min.mjs``) in the browser of ``--webgpu``."""

    name = "onnxruntime-web-jsep"
    flavor = "jsep"
    bundle = "ort.min.mjs"
    provider = "JsExecutionProvider"
    live_sessions = None  # it has no such hang, and re-making sessions would more than double its column's time


def _ms(got, key: str) -> float | None:
    value = got.get(key) if isinstance(got, dict) else None
    return round(float(value), 3) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _console(report: dict, *sources) -> None:
    """The console warnings and errors that came with the session (when made for this case) and the run."""
    lines = []
    for source in sources:
        got = source.get("console") if isinstance(source, dict) else source
        for line in got if isinstance(got, list) else []:
            if isinstance(line, dict) and isinstance(line.get("text"), str):
                text = " ".join(ANSI.sub("", line["text"]).split())[:600]
                if text not in lines:
                    lines.append(text)
    if lines:
        report["console"] = lines[:20]


def ort_dist() -> Path | None:
    """``node_modules/onnxruntime-web/dist`` of the suite's own checkout (or of ``CONFORMANCE_ORT_WEB``, a package
    directory), None when neither has one."""
    override = os.environ.get("CONFORMANCE_ORT_WEB", "").strip()
    here = Path(__file__).resolve()
    # never the current directory's: run inside a kernel repository's checkout, that is the pull request's own
    roots = [Path(override)] if override else [d / "node_modules" / "onnxruntime-web" for d in here.parents]
    return next((r / "dist" for r in roots if (r / "dist" / "ort.webgpu.min.mjs").is_file()), None)


def ort_file(parts: list[str]) -> tuple[bytes, str] | None:
    """The page server's route ``ort/<file>``: a file of ORT Web's ``dist/`` (:data:`ORT_FILE`), a regular file
    inside it and never through a link out of it; None for any other path under ``ort/``."""
    if len(parts) != 2 or not ORT_FILE.match(parts[1]):
        return None
    name = parts[1]
    dist = ort_dist()
    path = dist / name if dist is not None else None
    if path is None or not path.is_file():
        raise RouteRefused(
            f"no {name} in onnxruntime-web's dist/ ({dist or 'node_modules/onnxruntime-web not found: run npm ci'})"
        )
    try:
        body = read_confined(dist, path, MAX_DATA_FILE)
    except ConformanceError as err:
        raise RouteRefused(str(err)) from None
    return body, MIME[name.rsplit(".", 1)[1]]


register("ort", Path(__file__).with_name("page_ort.mjs"), routes={"ort": ort_file})
