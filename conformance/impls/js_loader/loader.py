"""A JavaScript loader in a browser page, as an implementation under test: the path web apps run.

``--impl js-loader`` certifies the reference loader (``loader/``, an npm package of this repository);
``--impl js-loader:PATH_OR_URL.mjs`` any module with the same interface (docs/manual/js-loader.md). In the browser of
``--webgpu`` (``chromium``, ``firefox`` or a served ``page:<id>``) the page runtime loads ``page_loader.mjs``, the
loader's host: it imports the module, hands it the package's files (every published version of the op, with a
metadata.json of their sha256) and each case's inputs; the loader plans, renders and dispatches by itself.

The loader is held to the device model, as this project's runtime is: the case's profile (cut down to the page's
device), the manifest's rejection reasons and details, the variant and dispatch of every case. Besides, its plan
(``kernel.plan``) must equal the suite's field by field: a difference fails the case naming the field and both
values. A loader that throws, hangs (the page's backstop), returns an output of the wrong length or typed-array
kind, or takes the tab down fails the case it was running, saying which.

What the loader says is not the evidence. The page hands it its device through a watch (``watchDevice`` in
``page_loader.mjs``) that records what each ``kernel()`` call did there, so a case passes on what ran on the
page's GPU: one dispatch per non-empty pass of the golden case's plan with its workgroup counts, a pipeline
compiled from the WGSL the package renders for that plan, and outputs that are what the dispatched kernel left in
its output binding (the host copies the binding behind the loader's work). A loader that computes its outputs
elsewhere (in JavaScript, on a device of its own) fails the case, and so does a refused call that dispatched
anything, whatever ``kernel.stats()`` says. The verdict's ``impl.evidence`` says what a passing case rested on.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from conformance.certify.implementations import ImplResult, Rejected
from conformance.config import REPO_LOADER
from conformance.engine.package import Package
from conformance.engine.planner import Planner
from conformance.engine.profile import KNOWN_FEATURES, LIMIT_NAMES, DeviceProfile
from conformance.errors import ConformanceError
from conformance.gpu.backends.page import WebGPUError
from conformance.impls.in_page import InPage, PageUnavailable, adapter_fields, not_installed
from conformance.impls.js_loader.files import jinja_dist, serve_loader
from conformance.impls.js_loader.plans import differences, dispatch_problems, dispatched, evidence_of, python_outcome
from conformance.impls.js_loader.published import published_files
from conformance.impls.js_loader.runtime import RUNTIMES, JsRuntime, RuntimeFailed
from conformance.impls.js_loader.runtime import unavailable as runtime_unavailable
from conformance.shader.render import context, render, template_environment

NAME = "js-loader"
URL = re.compile(r"https?://", re.IGNORECASE)
DTYPES = {"float32": np.float32, "float16": np.float16}


class LoaderFailed(ConformanceError):
    """The loader threw, hung, broke its interface or planned otherwise than the suite: this case fails."""


def _profile(got: dict) -> DeviceProfile:
    limits = {
        k: v
        for k, v in (got.get("limits") or {}).items()
        if k in LIMIT_NAMES and isinstance(v, int) and not isinstance(v, bool) and v >= 0
    }
    features = frozenset(f for f in got.get("features") or () if f in KNOWN_FEATURES)
    return DeviceProfile("page device (js-loader)", limits=limits, features=features)


class JsLoader(InPage):
    """A JavaScript loader module run by ``page_loader.mjs`` in the browser of ``--webgpu``."""

    name = NAME
    runs_what = "a JavaScript loader"
    has_variants = True
    follows_device_model = True

    def __init__(
        self, device: str = "auto", adapter: str | None = None, webgpu: str = "chromium", loader: str | None = None
    ):
        self.webgpu = webgpu
        self.loader = loader or str(REPO_LOADER / "src" / "index.js")
        if loader:
            self.name = f"{NAME}:{loader}"
        self._module: str | None = None  # the module's URL as the page imports it
        self._page = None
        self._backend = None  # the browser (or the runtime's host) that page is of
        self._profile: DeviceProfile | None = None
        self.device_features: frozenset | None = None
        self._kernels: dict[str, Exception | None] = {}
        self._planners: dict[str, Planner] = {}
        self._files: dict[str, tuple[dict, int]] = {}
        self._packages: dict[str, Package] = {}
        self._wgsl: dict[tuple, str | None] = {}  # (package, template, its context) -> the WGSL the package renders
        self._environments: dict = {}  # package -> its template environment (each template compiled once)
        self._adapter: dict | None = None  # the page's adapter.info
        self._dispatches = 0  # dispatches the page saw the loader submit, over every page of the run
        self._dispatch_base = 0  # a host that watches no device: what kernel.stats() said on the pages before
        self._runtime: JsRuntime | None = None  # --webgpu=node or deno: the host process running the loader
        self._starts = 0  # that host's starts when the kernels were last sent (a fresh host needs them)

    # -- Implementation ------------------------------------------------------------------------
    def available(self) -> str | None:
        if jinja_dist() is None:  # the loader imports it
            return not_installed(self, "@huggingface/jinja", "@huggingface/jinja/dist/index.js", "CONFORMANCE_JINJA_JS")
        if self.webgpu in RUNTIMES and URL.match(self.loader):
            return f"{self.name}: --webgpu={self.webgpu} imports a loader from a file, not a URL (a browser column can)"
        if self.webgpu in RUNTIMES and runtime_unavailable(self.webgpu):
            return f"{self.name}: --webgpu={self.webgpu}: {runtime_unavailable(self.webgpu)}"
        return super().available()

    @property
    def profile(self) -> DeviceProfile:
        self.ensure_page()
        return self._profile

    def describe(self) -> dict:
        browser = self.engine(self._backend)
        return {
            "implementation": self.name,
            "module": self.loader,
            "browser": browser,
            **adapter_fields({"info": self._adapter}),
            **_adapter_details(self._adapter, browser),
            "features": sorted(self.device_features or ()),
        }

    def prepare(self, package: Package) -> None:
        self._planners[package.name] = Planner(package.manifest)
        self._packages[package.name] = package
        self._files[package.name] = (published_files(package), package.version)

    def dispatch_count(self) -> int:
        return self._dispatches

    def plan(self, case) -> str:
        got = self._call_kernel(
            case,
            {role: None if arg is None else [arg[1], list(arg[0]), None] for role, arg in case.inputs.items()},
            plan_only=True,
        )
        self._raise_rejection(got)
        return got["plan"]["variant"]

    def run(self, case, inputs) -> ImplResult:
        page = self.ensure_page()
        feeds = {
            role: None if a is None else [a.dtype.name, list(a.shape), page.data_ref(np.ascontiguousarray(a).tobytes())]
            for role, a in inputs.items()
        }
        got = self._call_kernel(case, feeds)
        work = got.get("gpu") if isinstance(got.get("gpu"), dict) else None
        if work is not None:
            self._dispatches += len(dispatched(work))
        elif isinstance(got.get("stats"), dict) and isinstance(got["stats"].get("dispatches"), int):
            self._dispatches = self._dispatch_base + got["stats"]["dispatches"]  # a host that watches no device
        report = {"plan_ms": _ms(got, "plan"), "run_ms": _ms(got, "run")}
        if work is not None:
            report["watch_ms"] = _ms(got, "watch")  # the host's copies of the output bindings, read back and compared
        if "error" in got:
            raise LoaderFailed(f"{self.name}: {_error_text(got['error'])}")
        self._raise_rejection(got, report)
        plan, ours = python_outcome(self._planners[case.package], case)
        found = differences(case.id, ours, {"plan": got["plan"]})
        if found:
            shown = "\n  ".join(f"{d.field}: the suite plans {d.python!r}, the loader {d.js!r}" for d in found[:12])
            raise LoaderFailed(
                f"{self.name}: kernel.plan() differs from the suite's plan in {len(found)} field(s):\n  {shown}"
            )
        if work is None:
            report["evidence"] = "values kernel() returned (the host watched no device: no dispatch was seen)"
        else:
            passes = list(case.expect.get("passes") or ())
            texts = self._rendered(case.package, plan, passes)
            problems = dispatch_problems(passes, texts, work)
            if problems:
                raise LoaderFailed(f"{self.name}: " + "\n  ".join(problems))
            report["evidence"] = evidence_of(work, passes, texts)
            report["dispatched"] = [
                "indirect" if d.get("indirect") else list(d["workgroups"]) for d in dispatched(work)
            ]
        outputs = {}
        for role, entry in (got.get("outputs") or {}).items():
            dtype, shape, ref = entry
            if dtype not in DTYPES:
                raise LoaderFailed(f"{self.name}: output {role} has dtype {dtype!r}")
            size = math.prod(shape) * np.dtype(DTYPES[dtype]).itemsize
            try:
                data = page.bytes_of(ref, size)
            except WebGPUError as exc:
                raise PageUnavailable(f"{self.name}: reading {role}: {exc}") from None
            outputs[role] = np.frombuffer(data, dtype=DTYPES[dtype]).reshape(shape).copy()
        plan = got["plan"]
        dispatch = [
            (p["name"], p["dispatch"]["threads"], p["dispatch"]["workgroupSize"], tuple(p["dispatch"]["workgroups"]))
            for p in plan["passes"]
        ]
        return ImplResult(outputs, plan["variant"], dispatch, extra={"report": report})

    def _rendered(self, name: str, plan, passes: list[dict]) -> list:
        """The WGSL the package renders for each pass of ``plan`` that dispatches (None for the others, and where the
        suite's plan is not the golden case's, or does not render: the case fails on that elsewhere)."""
        if plan is None or [p.name for p in plan.passes] != [p.get("name") for p in passes]:
            return [None] * len(passes)
        texts = []
        package = self._packages[name]
        for pass_plan in plan.passes:
            if 0 in pass_plan.dispatch.counts:
                texts.append(None)
                continue
            key = (name, pass_plan.shader, json.dumps(context(plan, pass_plan), sort_keys=True, default=str))
            if key not in self._wgsl:
                try:
                    self._wgsl[key] = render(package, plan, pass_plan, self._environment(name))
                except ConformanceError:
                    self._wgsl[key] = None
            texts.append(self._wgsl[key])
        return texts

    def _environment(self, name: str):
        if name not in self._environments:
            self._environments[name] = template_environment(self._packages[name])
        return self._environments[name]

    # -- the page --------------------------------------------------------------------------------
    def _raise_rejection(self, got: dict, report: dict | None = None) -> None:
        rejected = got.get("rejected")
        if rejected is None:
            return
        if rejected.get("name") != "ContractError" or not rejected.get("reason"):
            raise LoaderFailed(
                f"{self.name}: kernel.plan() threw {_error_text(rejected)} (a refusal is a ContractError with a reason)"
            )
        raise Rejected(
            f"{self.name}: {rejected.get('message')}",
            reason=rejected["reason"],
            argument=rejected.get("argument"),
            failures=rejected.get("failures"),
            report=report,
        )

    def _call_kernel(self, case, feeds: dict, plan_only: bool = False) -> dict:
        page = self.ensure_page()
        why = self._kernel(page, case.package)
        if why is not None:
            raise LoaderFailed(f"{self.name}: getKernel() failed for {case.package}: {why}")
        options = {
            "attributes": dict(case.attributes),
            "tunables": dict(case.tunables),
            "limits": dict(case.profile.limits),
            "features": sorted(case.profile.features),
        }
        got = self.call(page, ["loaderRun", 0, case.package, feeds, options, plan_only])
        if not isinstance(got, dict):
            raise LoaderFailed(f"{self.name}: the page answered loaderRun with {str(got)[:200]}")
        return got

    def _kernel(self, page, name: str) -> str | None:
        """getKernel() once per package and page; the error text when it failed."""
        if name not in self._kernels:
            files, version = self._files[name]
            refs = {str(v): {f: page.data_ref(data) for f, data in named.items()} for v, named in files.items()}
            got = self.call(page, ["loaderKernel", 0, name, self._module, refs, version])
            self._kernels[name] = _error_text(got["error"]) if isinstance(got, dict) and "error" in got else None
        return self._kernels[name]

    def ensure_page(self):
        """The page (or the runtime's host) with the loader's device open; a fresh one (a new page, a host started
        again) gets the kernels again."""
        backend, page = self._host()
        starts = page.starts if isinstance(page, JsRuntime) else 0  # a page is loaded once; a host restarts
        if page is self._page and starts == self._starts:
            return page
        self._starts = starts
        self._kernels.clear()
        self._dispatch_base = self._dispatches
        if self._module is None:
            self._module = (
                self.loader if URL.match(self.loader) or self.webgpu in RUNTIMES else serve_loader(Path(self.loader))
            )
        self.call(page, ["extend", 0, "loader"])
        got = self.call(page, ["loaderDevice", 0])
        if not isinstance(got, dict) or "error" in got:
            raise PageUnavailable(
                f"{self.name}: no WebGPU device in the page: {got.get('error') if isinstance(got, dict) else got}"
            )
        self._profile = _profile(got)
        self._adapter = got.get("adapter") if isinstance(got.get("adapter"), dict) else None
        self.device_features = self._profile.features
        self._backend, self._page = backend, page
        return page

    def _host(self):
        """(what runs the loader, the object taking its commands): a browser and its page, or a JavaScript runtime's
        host process (Node with Dawn, Deno with wgpu), which answers the same commands (``runtime.py``)."""
        if self.webgpu not in RUNTIMES:
            return self.page()
        if self._runtime is None:
            self._runtime = JsRuntime(self.webgpu, None if URL.match(self.loader) else self.loader)
        try:
            self._runtime.start()  # a host that died or timed out is started afresh: its kernels are sent again
        except RuntimeFailed as exc:
            raise PageUnavailable(f"{self.name}: {exc}") from None
        return self._runtime, self._runtime


def _adapter_details(info: dict | None, browser: str | None) -> dict:
    """The page's adapter as the report's device line shows one: its type, backend and driver, through the browser."""
    if not info:
        return {}
    shown = {"type": info.get("type"), "backend": info.get("backend"), "driver": info.get("driver"), "webgpu": browser}
    return {k: v for k, v in shown.items() if v}


def _ms(got: dict, key: str) -> float | None:
    value = (got.get("ms") or {}).get(key) if isinstance(got.get("ms"), dict) else None
    return round(float(value), 3) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _error_text(err) -> str:
    if isinstance(err, dict):
        return f"{err.get('name', 'Error')}: {err.get('message', '')}"
    return str(err)
