"""Implementations under test: the interface, the registry, and the contract an outside implementation is held to.

The suite certifies *implementations* of a kernel package's contract.  The default, ``manifest``, is this
project's runtime: the package's manifest planned by :mod:`conformance.planner` and its templates run on the
WebGPU device (every check of :mod:`conformance.checks` applies: variant, dispatch, guards, values).  Any other
implementation only has to turn a case's input arrays into output arrays (and may report the variant it chose):

.. code-block:: python

    class MyImpl:
        name = "my-impl"
        has_variants = False             # True when run() reports the variant (and maybe the dispatch) it chose

        def available(self) -> str | None:     # None when usable here, else why not (every case is skipped)
            ...
        def prepare(self, package) -> None:    # once per package (conformance.package.Package); raise
            ...                                # NotSupported(reason) to skip all of its cases
        def run(self, case, inputs) -> ImplResult:
            ...                                # raise Rejected(reason) when the call is refused

Register it under the entry point group ``conformance.implementations`` (``name = "module:factory"``, the factory
called with no arguments) and select it with ``pytest conformance/ --impl NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from conformance.errors import ConformanceError, ContractError

ENTRY_POINT_GROUP = "conformance.implementations"
DEFAULT_IMPL = "manifest"


class Rejected(ContractError):
    """An implementation refused a call (the counterpart of the manifest's rejections)."""

    def __init__(self, message: str, *, reason: str = "rejected", argument: str | None = None):
        super().__init__(message, reason=reason, argument=argument)


class NotSupported(ConformanceError):
    """An implementation does not implement this package at all (its cases are skipped with this reason)."""


@dataclass
class ImplResult:
    """What one call of an implementation gave: outputs by role, and the variant/dispatch when it has them."""

    outputs: dict[str, np.ndarray]
    variant: str | None = None
    dispatch: list | None = None        # [(pass name, threads, workgroup size, (x, y, z))] like the golden cases
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Implementation(Protocol):
    name: str
    has_variants: bool

    def available(self) -> str | None: ...

    def prepare(self, package) -> None: ...

    def run(self, case, inputs: dict[str, np.ndarray | None]) -> ImplResult: ...


class ManifestImplementation:
    """This project's runtime over the packages under ``--specs`` (the plugin checks it with CaseChecker)."""

    name = DEFAULT_IMPL
    has_variants = True

    def __init__(self, device=None):
        self._device = device
        self._kernels: dict[str, Any] = {}

    def available(self) -> str | None:
        return None

    def prepare(self, package) -> None:
        from conformance.gpu.kernel import Kernel
        self._kernels[package.name] = Kernel(package, self._device)

    def run(self, case, inputs) -> ImplResult:
        kernel = self._kernels[case.package]
        try:
            plan, run = kernel.run(case.profile, case.tunables, verify=True, **inputs)
        except ContractError as err:
            raise Rejected(str(err), reason=err.reason, argument=err.argument) from None
        dispatch = [(p.name, p.dispatch.threads, p.dispatch.workgroup_size, p.dispatch.counts) for p in plan.passes]
        return ImplResult(dict(run.outputs), plan.variant, dispatch)


def _builtin() -> dict[str, Callable[[], Implementation]]:
    from conformance.certify.onnxruntime import OrtCpu, OrtWebGpu
    return {DEFAULT_IMPL: ManifestImplementation, OrtCpu.name: OrtCpu, OrtWebGpu.name: OrtWebGpu}


def registered() -> dict[str, Callable[[], Implementation]]:
    """Name -> factory: the built-in implementations, then the entry points of ``conformance.implementations``."""
    found = dict(_builtin())
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found and ep.value.startswith("conformance."):
            continue  # a built-in registered both ways
        found[ep.name] = ep
    return found


def load_implementation(name: str) -> Implementation:
    known = registered()
    if name not in known:
        raise ConformanceError(f"no implementation {name!r}; known: {', '.join(sorted(known))} "
                               f"(third parties register under the entry point group {ENTRY_POINT_GROUP!r})")
    factory = known[name]
    if hasattr(factory, "load"):        # an entry point
        factory = factory.load()
    impl = factory()
    missing = [a for a in ("name", "available", "prepare", "run") if not hasattr(impl, a)]
    if missing:
        raise ConformanceError(f"implementation {name!r} lacks {', '.join(missing)} (see conformance.impl)")
    return impl
