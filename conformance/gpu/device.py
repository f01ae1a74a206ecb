"""Real WebGPU devices through the ``wgpu`` package: pick an adapter, describe it, open a device.

The device is opened once per process with the adapter's own limits for
everything a compute kernel can need (storage sizes, workgroup counts and
sizes) and with ``shader-f16``/``timestamp-query`` when the adapter has them,
so one device serves every plan whose profile the adapter satisfies.

A device whose run did not finish in time is *abandoned* (:func:`abandon`):
marked lost and destroyed, with the still-running work remembered.  Some
drivers (lavapipe: one thread pool per process) cannot open or run on another
device until that work ends, so :func:`get_device` waits for it at most
``CONFORMANCE_DEVICE_RECOVERY_TIMEOUT`` seconds (default 60) per abandoned run,
then fails at once with a :class:`DeviceError` saying why, until the work ends.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field

from conformance.errors import DeviceError
from conformance.engine.profile import LIMIT_NAMES, DeviceProfile, camel_limit

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences Mesa's warning on headless machines

BACKENDS = {"vulkan": "Vulkan", "gl": "OpenGL", "metal": "Metal", "dx12": "D3D12", "auto": None}
_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1}

#: Limits raised to the adapter's maximum when the device is opened.
RAISED_LIMITS = ("maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupsPerDimension",
                 "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX", "maxComputeWorkgroupSizeY",
                 "maxComputeWorkgroupSizeZ", "maxStorageBuffersPerShaderStage", "maxComputeWorkgroupStorageSize",
                 "maxUniformBufferBindingSize", "maxBindingsPerBindGroup")
OPTIONAL_FEATURES = ("shader-f16", "timestamp-query", "timestamp-query-inside-encoders")


def _wgpu():
    try:
        import wgpu
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise DeviceError(f"the wgpu package is not importable: {exc}") from None
    return wgpu


def describe(adapter) -> str:
    info = adapter.info
    return f"{info.get('device', '?')} ({info.get('adapter_type', '?')}, {info.get('backend_type', '?')})"


def find_adapter(backend: str = "auto", adapter_filter: str | None = None):
    """The best adapter of ``backend`` whose name contains ``adapter_filter`` (case-insensitive)."""
    if backend not in BACKENDS:
        raise DeviceError(f"unknown device backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    wgpu = _wgpu()
    try:
        adapters = list(wgpu.gpu.enumerate_adapters_sync())
    except Exception as exc:  # wgpu raises plain RuntimeError when no instance can be made
        raise DeviceError(f"cannot enumerate WebGPU adapters: {exc}") from None
    wanted = BACKENDS[backend]
    found = [a for a in adapters
             if (wanted is None or a.info.get("backend_type") == wanted)
             and (not adapter_filter or adapter_filter.lower() in a.summary.lower())]
    if not found:
        seen = "; ".join(describe(a) for a in adapters) or "none"
        raise DeviceError(f"no WebGPU adapter for --device={backend}"
                          f"{f' --adapter={adapter_filter!r}' if adapter_filter else ''}; adapters present: {seen}. "
                          f"On Debian without a GPU: apt-get install -y mesa-vulkan-drivers libvulkan1")
    found.sort(key=lambda a: (_TYPE_RANK.get(a.info.get("adapter_type"), 9),
                              _BACKEND_RANK.get(a.info.get("backend_type"), 9)))
    return found[0]


def adapter_profile(adapter, name: str | None = None) -> DeviceProfile:
    limits = {}
    for key, value in adapter.limits.items():
        camel = camel_limit(key)
        # wgpu reports 0 for limits it does not implement (e.g. maxBindGroupsPlusVertexBuffers): keep the default
        if camel in LIMIT_NAMES and isinstance(value, int) and (value > 0 or camel.startswith("min")):
            limits[camel] = value
    return DeviceProfile(name or describe(adapter), limits, frozenset(adapter.features))


@dataclass
class Device:
    """An open wgpu device with the profile it can serve and its compiled pipelines."""

    adapter: object
    device: object
    profile: DeviceProfile
    backend: str
    pipelines: dict = field(default_factory=dict)
    compilations: int = 0
    dispatches: int = 0
    lost: bool = False
    adapter_filter: str | None = None   # as given to get_device: a fresh device is opened the same way

    @property
    def summary(self) -> dict:
        info = self.adapter.info
        return {"adapter": info.get("device"), "backend": info.get("backend_type"),
                "type": info.get("adapter_type"), "driver": info.get("description"),
                "vendor": info.get("vendor"), "features": sorted(self.profile.features & set(OPTIONAL_FEATURES)),
                "limits": {k: self.profile.limits[k] for k in RAISED_LIMITS[:5]}}


def open_device(backend: str = "auto", adapter_filter: str | None = None) -> Device:
    adapter = find_adapter(backend, adapter_filter)
    profile = adapter_profile(adapter)
    features = [f for f in OPTIONAL_FEATURES if f in adapter.features]
    from conformance.engine.profile import kebab_limit
    required = {kebab_limit(k): profile.limits[k] for k in RAISED_LIMITS}
    try:
        device = adapter.request_device_sync(label="conformance", required_features=features,
                                             required_limits=required)
    except Exception as exc:
        raise DeviceError(f"cannot open a device on {describe(adapter)}: {exc}") from None
    granted = DeviceProfile(describe(adapter), {**profile.limits, **{
        camel_limit(k): v for k, v in device.limits.items()
        if camel_limit(k) in LIMIT_NAMES and isinstance(v, int) and v > 0}}, frozenset(device.features))
    return Device(adapter, device, granted, backend, adapter_filter=adapter_filter)


_devices: dict[tuple[str, str | None], Device] = {}
_lock = threading.RLock()

DEFAULT_RECOVERY_TIMEOUT = 60.0


@dataclass
class Abandoned:
    """Work left running on an abandoned device: the thread waiting for it, and what it was."""

    thread: threading.Thread
    what: str
    since: float
    deadline: float
    device: object = None  # destroyed once the thread has returned (wgpu objects are not thread-safe)


_abandoned: list[Abandoned] = []


def recovery_timeout() -> float:
    """Seconds :func:`get_device` waits for abandoned work to end: ``CONFORMANCE_DEVICE_RECOVERY_TIMEOUT``."""
    raw = os.environ.get("CONFORMANCE_DEVICE_RECOVERY_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_RECOVERY_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value >= 0:
        raise DeviceError(f"CONFORMANCE_DEVICE_RECOVERY_TIMEOUT={raw!r} must be a number of seconds >= 0")
    return value


def abandon(device: Device, thread: threading.Thread | None, what: str) -> None:
    """Give ``device`` up (a run on it did not finish): mark it lost, destroy it, remember the work still running."""
    device.lost = True
    now = time.monotonic()
    if thread is not None and thread.is_alive():
        # the thread may still be inside a call on this device: destroy it only after the thread returns
        _abandoned.append(Abandoned(thread, what, now, now + recovery_timeout(), device.device))
        return
    _destroy(device.device)


def _destroy(wgpu_device) -> None:
    try:
        wgpu_device.destroy()
    except Exception:  # already lost or destroyed
        pass


def abandoned_work() -> list[str]:
    """What abandoned runs are still running on the driver (for reports and messages)."""
    return [a.what for a in list(_abandoned) if a.thread.is_alive()]  # no lock: get_device may hold it waiting


def _wait_for_abandoned_work() -> None:
    for item in list(_abandoned):
        remaining = item.deadline - time.monotonic()
        if remaining > 0 and not math.isinf(remaining):
            item.thread.join(remaining)
        elif math.isinf(remaining):
            item.thread.join()
        if item.thread.is_alive():
            age = time.monotonic() - item.since
            raise DeviceError(f"no fresh device: {item.what} timed out {age:.0f} s ago and is still running on the "
                              f"driver, which cannot open or run another device until it ends (waited "
                              f"{item.deadline - item.since:g} s: CONFORMANCE_DEVICE_RECOVERY_TIMEOUT)")
        _abandoned.remove(item)
        if item.device is not None:
            _destroy(item.device)


def get_device(backend: str = "auto", adapter_filter: str | None = None) -> Device:
    """This process's device for (backend, filter); a lost device is replaced by a fresh one.

    While a run abandoned on a timeout is still running, a fresh device is opened only once it ends
    (waiting at most :func:`recovery_timeout` seconds for it); past that, :class:`DeviceError` at once.
    """
    key = (backend, adapter_filter)
    with _lock:
        dev = _devices.get(key)
        if dev is None or dev.lost:
            _wait_for_abandoned_work()
            dev = _devices[key] = open_device(backend, adapter_filter)
        return dev


def default_backend() -> tuple[str, str | None]:
    """The backend and adapter filter used when none is given (``CONFORMANCE_DEVICE`` / ``CONFORMANCE_ADAPTER``)."""
    return os.environ.get("CONFORMANCE_DEVICE", "auto"), os.environ.get("CONFORMANCE_ADAPTER") or None
