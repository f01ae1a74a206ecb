"""Implementations under test: the interface, the registry, and this project's manifest runtime as one of them.

The suite certifies *implementations* of a kernel package's contract. Every implementation, this project's
runtime included, is driven through the same interface by :class:`conformance.certify.checker.Checker`:

.. code-block:: python

    class MyImpl:
        name = "my-impl"
        has_variants = False             # True when run() reports the variant (and maybe the dispatch) it chose

        def available(self) -> str | None:     # None when usable here, else why not (every case is skipped)
            ...
        def prepare(self, package) -> None:    # once per package (conformance.engine.package.Package); raise
            ...                                # NotSupported(reason) to skip all of its cases
        def run(self, case, inputs) -> ImplResult:
            ...                                # raise Rejected(reason) when the call is refused

``run`` gets the case and its input arrays. ``inputs`` maps each input role of the manifest to a NumPy array
(None for an absent optional input). ``case`` is a :class:`cases.model.Case`, a frozen dataclass:

================  ===============================================  ===============================================
field             type                                             meaning
================  ===============================================  ===============================================
``id``            ``str``                                          the case id, e.g. ``Gelu/f32/X[4,3]/vec4``
``package``       ``str``                                          the op id, e.g. ``com.microsoft.Gelu``
                                                                   (``prepare``'s ``package.name``)
``family``        ``str``                                          the case family that made it (``ranks``...)
``inputs``        ``dict[str, tuple[tuple[int, ...], str] | None]`` role -> (shape, dtype name: ``"float32"``,
                                                                   ``"float16"``), None when absent
``profile``       ``conformance.engine.profile.DeviceProfile``     the device profile the manifest plans under
                                                                   (``profile.name``: ``baseline``, ``no-f16``...)
``tunables``      ``dict[str, int]``                               overrides of the manifest's tunables
``attributes``    ``dict[str, Any]``                               the op attributes the call passes (the others
                                                                   take the manifest's defaults); ``call_args()``
                                                                   is the inputs and these together
``data``          ``cases.data.Recipe``                            how ``inputs`` were generated (seeded)
``expect``        ``dict``                                         the manifest's outcome: ``{"outcome":
                                                                   "accepted", "variant", "passes", "outputs":
                                                                   {role: {"shape", "dtype"}}}`` or ``{"outcome":
                                                                   "rejected", "reason", "detail"}``
``heavy``         ``bool``                                         buffers of hundreds of MB
``markers``       ``tuple[str, ...]``                              its pytest markers
================  ===============================================  ===============================================

and ``case.accepted`` is ``expect["outcome"] == "accepted"``. ``run`` returns :class:`ImplResult` (``outputs``:
role -> array; ``variant`` and ``dispatch`` where it has them) or raises :class:`Rejected` (``message``,
``argument=`` the role it refuses); ``prepare`` may raise :class:`NotSupported`. A complete example, certified by
the suite's own tests (``tests/certify/test_example_impl.py``), is ``docs/examples/numpy_gelu.py``.

Register a factory under the entry point group ``conformance.implementations`` (``name = "module:factory"``), or
pass ``--impl module:factory`` for one importable without registering; it is called with ``device=``,
``adapter=`` and ``webgpu=`` when it accepts them (the ``--device``/``--adapter``/``--webgpu`` of the run), else
with no arguments. Select a
registered one with ``pytest conformance/ --impl NAME``.

The interface is declared here, once: :class:`Implementation` (what every implementation offers),
:class:`DeviceModel` (what one that plans by the manifest itself offers besides) and :class:`Hooks` (the optional
members, each with the default that applies where an implementation lacks it; the suite reads them only through
it):

* ``follows_device_model = True``: the implementation plans by the manifest itself (this project's runtime, a
  JavaScript loader) and is a :class:`DeviceModel`: it is held to each case's device profile and tunables, its
  rejections must give the manifest's reason, and its variant and dispatch are checked on every case
  (:mod:`conformance.certify.rules`). It offers ``profile`` (what its device supports), ``plan(case)`` (the
  variant, without running: for rejection cases too large to allocate) and ``dispatch_count()`` (to prove a
  rejected call dispatched nothing). Default: False, held to the manifest's contract on an unbounded device.
* ``device_features``: the features of the device it runs on, where it knows them (a frozenset of WebGPU feature
  names); an implementation outside the device model that refuses an f16 call on a device without
  ``shader-f16`` is then *not applicable*, not a divergence. Default: None (unknown).
* ``provider``: what inside it runs the kernels (an execution provider), named in reports and repro groups.
  Default: None.
* ``describe() -> dict``: what the cases ran on, for the report's device line. Default: its name, provider and
  ``available()``.
* ``compilations() -> int``: shader compilations so far, summed over the run's processes. Default: not counted.
* ``repro_files(failure) -> dict[str, bytes]``: the files of a standalone reproduction of one failure (relative
  name -> bytes, the first one to run; it may raise :class:`NotSupported`), which ``--repro-dir`` writes for the
  smallest case of each group of identical failures (:mod:`conformance.certify.repro.collect`: ``failure`` is a
  :class:`~conformance.certify.repro.collect.Failure`). Default: none, and the repro index says so.

This project's runtime is :class:`ManifestImplementation`, below; the others under test live in
``conformance.impls`` and are named here only by their entry-point strings (:data:`BUILTIN`).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from conformance.engine.package import Package
from conformance.engine.profile import DeviceProfile
from conformance.errors import ConformanceError, ContractError, NoVariantError
from conformance.gpu.device import devices
from conformance.gpu.kernel import Kernel

ENTRY_POINT_GROUP = "conformance.implementations"
DEFAULT_IMPL = "manifest"


class Rejected(ContractError):
    """An implementation refused a call (the counterpart of the manifest's rejections)."""

    def __init__(
        self,
        message: str,
        *,
        reason: str = "rejected",
        argument: str | None = None,
        failures: dict | None = None,
        report: dict | None = None,
    ):
        super().__init__(message, reason=reason, argument=argument)
        #: For a manifest's no-variant rejection: variant id -> the first predicate that failed, with values.
        self.failures = dict(failures or {})
        #: What the implementation reports of the refused call (as ``ImplResult.extra["report"]``).
        self.report = dict(report or {})


class NotSupported(ConformanceError):
    """An implementation does not implement this package at all (its cases are skipped with this reason)."""


@dataclass
class ImplResult:
    """What one call of an implementation gave: outputs by role, and the variant/dispatch when it has them."""

    outputs: dict[str, np.ndarray]
    variant: str | None = None
    dispatch: list | None = None  # [(pass name, threads, workgroup size, (x, y, z))] like the golden cases
    #: Per output: whether the bytes after it are untouched (None: the implementation cannot tell).
    guards_intact: dict[str, bool] | None = None
    #: Per input: whether the device copy is unchanged after the run (None: the checker compares host arrays).
    inputs_intact: dict[str, bool] | None = None
    #: Per output: whether the guarded run and the run bound as in production gave the same bytes (None: n/a).
    identical: dict[str, bool] | None = None
    #: ``extra["report"]``: JSON-able facts of this call the verdict carries as ``impl`` (cost, provider, console).
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Implementation(Protocol):
    """What every implementation under test offers (see the module's docstring for each member)."""

    name: str
    has_variants: bool

    def available(self) -> str | None: ...

    def prepare(self, package) -> None: ...

    def run(self, case, inputs: dict[str, np.ndarray | None]) -> ImplResult: ...


class DeviceModel(Protocol):
    """What an implementation that plans by the manifest itself offers besides (``follows_device_model = True``).
    Not runtime-checkable on purpose: asking for ``profile`` opens the implementation's device."""

    follows_device_model: bool

    @property
    def profile(self) -> DeviceProfile: ...

    def plan(self, case) -> str: ...

    def dispatch_count(self) -> int: ...


#: The members a DeviceModel adds to an Implementation.
DEVICE_MODEL = ("profile", "plan", "dispatch_count")


class Hooks:
    """An implementation's optional members, each with the default that applies where it lacks one: the one place
    the suite reads them (the checker, the rules, the case runner, the repro collector)."""

    def __init__(self, impl):
        self.impl = impl

    @property
    def device_model(self) -> DeviceModel | None:
        """The implementation, where it follows the device model; else None (the manifest's contract applies)."""
        return self.impl if getattr(self.impl, "follows_device_model", False) else None

    @property
    def device_features(self) -> frozenset | None:
        return getattr(self.impl, "device_features", None)

    @property
    def provider(self) -> str | None:
        return getattr(self.impl, "provider", None)

    def describe(self) -> dict | None:
        """What the cases ran on; without ``describe()``: the name, provider and why it is unavailable, if it is
        (outside the device model, what it runs on is its own)."""
        describe = getattr(self.impl, "describe", None)
        if describe is not None:
            return describe()
        return {"implementation": self.impl.name, "provider": self.provider, "available": self.impl.available()}

    def compilations(self) -> int | None:
        """Shader compilations so far; None where the implementation does not count them."""
        count = getattr(self.impl, "compilations", None)
        return count() if count is not None else None

    @property
    def makes_repros(self) -> bool:
        return getattr(self.impl, "repro_files", None) is not None

    def repro_files(self, failure) -> dict[str, bytes]:
        """Its standalone repro of ``failure`` (call only where :attr:`makes_repros`)."""
        return self.impl.repro_files(failure)


class ManifestImplementation:
    """This project's runtime: the package's manifest planned by the engine, its templates run on a WebGPU device."""

    name = DEFAULT_IMPL
    has_variants = True
    follows_device_model = True

    def __init__(self, device: str = "auto", adapter: str | None = None, webgpu: str = "wgpu"):
        self.backend, self.adapter, self.webgpu = device, adapter, webgpu
        self._kernels: dict[str, Kernel] = {}
        self._last = None  # the device of the latest call, for reports (never opens one)

    @property
    def device(self):
        """The pool's device for this run (a fresh one after a loss or a timeout)."""
        self._last = devices.get(self.backend, self.adapter, self.webgpu)
        return self._last

    def describe(self) -> dict | None:
        """The device the cases ran on (adapter, backend, driver, features, limits); None before any ran."""
        return self._last.summary if self._last is not None else None

    def compilations(self) -> int:
        return self._last.compilations if self._last is not None else 0

    @property
    def profile(self) -> DeviceProfile:
        return self.device.profile

    def available(self) -> str | None:
        return None  # without a device every case fails, with the reason: a certification cannot skip its device

    def prepare(self, package: Package) -> None:
        self._kernels[package.name] = Kernel(package, backend=(self.backend, self.adapter, self.webgpu))

    def dispatch_count(self) -> int:
        """Dispatches so far on the latest device (opens none: asked after a rejection, too)."""
        return self._last.dispatches if self._last is not None else 0

    def plan(self, case) -> str:
        try:
            return self._kernels[case.package].plan(case.profile, case.tunables, **case.call_args()).variant
        except ContractError as err:
            raise _rejected(err) from None

    def run(self, case, inputs) -> ImplResult:
        try:
            plan, run = self._kernels[case.package].run(
                case.profile, case.tunables, verify=True, **inputs, **case.attributes
            )
        except ContractError as err:
            raise _rejected(err) from None
        dispatch = [(p.name, p.dispatch.threads, p.dispatch.workgroup_size, p.dispatch.counts) for p in plan.passes]
        return ImplResult(
            dict(run.outputs),
            plan.variant,
            dispatch,
            run.guards_intact,
            run.inputs_intact,
            run.identical,
            extra={"guard_breach": run.guard_breach},
        )


def _rejected(err: ContractError) -> Rejected:
    failures = err.failures if isinstance(err, NoVariantError) else None
    return Rejected(str(err), reason=err.reason, argument=err.argument, failures=failures)


#: The built-in implementations, as "module:factory" (loaded on selection: ONNX Runtime is optional).
BUILTIN = {
    DEFAULT_IMPL: "conformance.certify.implementations:ManifestImplementation",
    "onnxruntime-cpu": "conformance.impls.onnxruntime.native:OrtCpu",
    "onnxruntime-webgpu": "conformance.impls.onnxruntime.native:OrtWebGpu",
    "onnxruntime-web": "conformance.impls.onnxruntime.web:OrtWeb",
    "onnxruntime-web-jsep": "conformance.impls.onnxruntime.web:OrtWebJsep",
    "js-loader": "conformance.impls.js_loader.loader:JsLoader",
}
#: ``--impl js-loader:PATH_OR_URL.mjs``: the js-loader implementation running another loader module.
LOADER_PREFIX = "js-loader:"


def registered() -> dict[str, str]:
    """Name -> "module:factory": the built-in implementations, then the entry points of the group."""
    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def _factory(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.partition(":")
    target = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def load_implementation(
    name: str, *, device: str = "auto", adapter: str | None = None, webgpu: str = "wgpu"
) -> Implementation:
    known = registered()
    extra = {}
    if name.startswith(LOADER_PREFIX):  # a loader module, not a Python module:factory
        name, extra = "js-loader", {"loader": name[len(LOADER_PREFIX) :]}
    if name not in known and ":" in name:  # --impl module:factory, importable but not registered
        known[name] = name
    if name not in known:
        raise ConformanceError(
            f"no implementation {name!r}; known: {', '.join(sorted(known))} "
            f"(third parties register under the entry point group {ENTRY_POINT_GROUP!r}, "
            f"or pass module:factory)"
        )
    try:
        factory = _factory(known[name])
    except (ImportError, AttributeError) as exc:
        raise ConformanceError(f"implementation {name!r} ({known[name]}) cannot be loaded: {exc}") from None
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    options = {k: v for k, v in (("device", device), ("adapter", adapter), ("webgpu", webgpu)) if k in params}
    impl = factory(**options, **extra)
    missing = [a for a in ("name", "available", "prepare", "run") if not hasattr(impl, a)]
    if Hooks(impl).device_model is not None:  # held to the device model: it must offer what that asks
        missing += [a for a in DEVICE_MODEL if not hasattr(type(impl), a) and not hasattr(impl, a)]
    if missing:
        raise ConformanceError(
            f"implementation {name!r} lacks {', '.join(missing)} (see conformance.certify.implementations)"
        )
    return impl
