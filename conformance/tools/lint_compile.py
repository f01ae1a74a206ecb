"""What lint compiles its renders with: a device, through the runtime's pipeline (what a run compiles).

Apart from :mod:`conformance.tools.lint` so that linting without compiling (``lint --no-compile``) loads nothing
of ``conformance.gpu``; the command opens a :class:`DeviceCompiler` only when it compiles.
"""

from __future__ import annotations

from typing import Callable

from conformance.engine.package import Package
from conformance.engine.plan import PassPlan, Plan
from conformance.gpu.device import Device
from conformance.gpu.runtime import Runtime


class DeviceCompiler:
    """Compiles the passes lint renders on ``device``, as a run would (the device's pipeline cache included)."""

    def __init__(self, device: Device):
        self.device = device

    @property
    def features(self) -> frozenset[str]:
        """The device's features: lint compiles no f16 pass on a device without ``shader-f16``."""
        return self.device.profile.features

    def for_package(self, package: Package) -> Callable[[Plan, PassPlan], object]:
        """Compiles one pass of ``package``'s plan; a shader that does not compile raises KernelRuntimeError."""
        return Runtime(self.device, package).pipeline
