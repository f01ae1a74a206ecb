"""The public API: ``load_kernel(name)`` gives a :class:`Kernel` that plans and runs calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from conformance.config import default_backend
from conformance.engine.call import split_attributes, tensor_arg
from conformance.engine.package import REPO_SPECS, Package, load_package, package_versions
from conformance.engine.plan import Plan
from conformance.engine.planner import Planner
from conformance.engine.profile import DeviceProfile
from conformance.errors import ContractError, ManifestError
from conformance.gpu import tuning
from conformance.gpu.device import Device, devices
from conformance.gpu.runtime import Run, Runtime


class Kernel:
    """One kernel package bound to a device (opened on first use)."""

    def __init__(
        self,
        package: Package,
        device: Device | None = None,
        *,
        backend: tuple[str, str | None, str] | None = None,
        tuned: bool = True,
    ):
        """``device``: run there (and on its replacement after a loss); else on the pool's device for ``backend``
        (backend name, adapter filter, WebGPU implementation), by default ``CONFORMANCE_DEVICE`` /
        ``CONFORMANCE_ADAPTER`` / ``CONFORMANCE_WEBGPU``. ``tuned=False``: plain calls keep the manifest's
        tunables too (the device's tuning table, keyed by op and version, is for the shipped package)."""
        self.package = package
        self.tuned = tuned
        self.manifest = package.manifest
        self.planner = Planner(package.manifest)
        self._device = device
        self._backend = backend

    @property
    def device(self) -> Device:
        if self._device is not None:
            self._device = devices.current(self._device)
            return self._device
        return devices.get(*(self._backend or default_backend()))

    def plan(
        self, profile: DeviceProfile | None = None, tunables: Mapping[str, int] | None = None, **args: Any
    ) -> Plan:
        """Plan a call given as ``role=(shape, dtype)``, ``role=array`` or ``role=None``, and the manifest's
        attributes by name (``epsilon=1e-6``; left out: the default).

        Without an explicit profile and tunables, the device's tuning table (written by
        ``python -m conformance bench --write-tuning``) may replace the manifest's default tunables.
        """
        tune = self.tuned and tunables is None and profile is None  # the device's table serves plain calls only
        profile = profile or self.device.profile
        plan = self.planner.plan_case(args, profile, tunables)
        if tune:
            tuned = self._tuned(plan)
            if tuned:
                plan = self.planner.plan_case(args, profile, tuned)
        return plan

    def _tuned(self, plan: Plan) -> dict[str, int]:
        """The device's tuning-table entry for this plan's dtype and variant, if it differs from the defaults."""
        dtype = next(iter(plan.outputs.values())).dtype if plan.outputs else ""
        tuned = tuning.lookup(self.device.summary, self.manifest.op_id, self.manifest.version, dtype, plan.variant)
        return tuned if any(self.manifest.tunables.get(k) != v for k, v in tuned.items()) else {}

    def run(
        self,
        profile: DeviceProfile | None = None,
        tunables: Mapping[str, int] | None = None,
        *,
        verify: bool = False,
        **arrays: Any,
    ) -> tuple[Plan, Run]:
        """Plan and run; returns the plan with the run's outputs and checks. Attributes are passed by name."""
        arrays, attributes = split_attributes(self.manifest, arrays)
        device = self.device
        lacking = profile.exceeds(device.profile) if profile is not None else []
        if lacking:
            raise ContractError(
                f"profile {profile.name!r} assumes what the device {device.profile.name!r} lacks: {', '.join(lacking)}",
                reason="profile",
            )
        for role, value in arrays.items():
            if value is not None and not isinstance(value, np.ndarray):
                raise ContractError(
                    f"argument {role!r}: expected a NumPy array or None, got {type(value).__name__}",
                    reason="argument",
                    argument=role,
                )
            tensor_arg(value, role)
        plan = self.plan(profile, tunables, **arrays, **attributes)  # profile None: the tuning table applies
        inputs = {spec.role: arrays.get(spec.role) for spec in self.manifest.inputs}
        return plan, Runtime(device, self.package).run(plan, inputs, verify=verify)

    def __call__(
        self, profile: DeviceProfile | None = None, tunables: Mapping[str, int] | None = None, **arrays: Any
    ) -> dict[str, np.ndarray]:
        return self.run(profile, tunables, **arrays)[1].outputs

    def __repr__(self):
        return f"<Kernel {self.manifest.op_id} from {self.package.root}>"


def load_kernel(
    ref: str | Path, *, device: Device | None = None, specs_dir: Path | None = None, version: int | None = None
) -> Kernel:
    """A kernel by package name under ``specs/`` (or ``specs_dir``), or by package directory.

    By name, ``version`` picks a published version of the contract (``<name>/`` is version 1, ``<name>@N/``
    version N); None: the newest. A directory is loaded as it is (``version``, when given, must match it).
    """
    versions = (
        package_versions(str(ref), specs_dir or REPO_SPECS)
        if isinstance(ref, str) and "/" not in ref and "@" not in ref
        else {}
    )
    if versions:
        pick = max(versions) if version is None else version
        if pick not in versions:
            raise ManifestError(
                f"kernel {ref!r} has no version {version} (published: {', '.join(map(str, versions))})", file=str(ref)
            )
        return Kernel(load_package(versions[pick]), device)
    package = load_package(ref, specs_dir)
    if version is not None and package.version != version:
        raise ManifestError(f"is version {package.version}, not {version}", file=str(package.root))
    return Kernel(package, device)
