"""Real WebGPU devices through the ``wgpu`` package: pick an adapter, describe it, open a device.

The device is opened once per process with the adapter's own limits for
everything a compute kernel can need (storage sizes, workgroup counts and
sizes) and with ``shader-f16``/``timestamp-query``/``subgroups`` when the adapter has them,
so one device serves every plan whose profile the adapter satisfies.

:class:`DevicePool` owns every device of the process.  A device whose run did
not finish in time is *abandoned*: marked lost and destroyed, with the
still-running work remembered.  Some drivers (lavapipe: one thread pool per
process) cannot open or run on another device until that work ends, so the pool
waits for it at most
``CONFORMANCE_DEVICE_RECOVERY_TIMEOUT`` seconds (default 60) per abandoned run,
then fails at once with a :class:`DeviceError` saying why, until the work ends.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field

from conformance.config import BACKENDS, env_float
from conformance.engine.profile import LIMIT_NAMES, DeviceProfile, camel_limit, kebab_limit
from conformance.errors import DeviceError
from conformance.gpu.backends import enumerate_adapters

STORAGE, COPY_SRC = 128, 4  # WebGPU buffer usage flags (the same numbers in every implementation)
_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1}

#: Limits raised to the adapter's maximum when the device is opened.
RAISED_LIMITS = (
    "maxStorageBufferBindingSize",
    "maxBufferSize",
    "maxComputeWorkgroupsPerDimension",
    "maxComputeInvocationsPerWorkgroup",
    "maxComputeWorkgroupSizeX",
    "maxComputeWorkgroupSizeY",
    "maxComputeWorkgroupSizeZ",
    "maxStorageBuffersPerShaderStage",
    "maxComputeWorkgroupStorageSize",
    "maxUniformBufferBindingSize",
    "maxBindingsPerBindGroup",
)
OPTIONAL_FEATURES = ("shader-f16", "timestamp-query", "timestamp-query-inside-encoders", "subgroups")
#: An implementation's own name for a WebGPU feature -> the WebGPU name profiles and manifests use (wgpu-native
#: calls WebGPU's ``subgroups`` ``subgroup``, after its native feature bit).
FEATURE_ALIASES = {"subgroup": "subgroups"}


def webgpu_features(names) -> frozenset[str]:
    """An adapter's or device's feature names, each under its WebGPU name."""
    return frozenset(FEATURE_ALIASES.get(n, n) for n in names)


def describe(adapter) -> str:
    info = adapter.info
    return f"{info.get('device', '?')} ({info.get('adapter_type', '?')}, {info.get('backend_type', '?')})"


def _backend_matches(adapter, wanted: str | None) -> bool:
    """``wanted`` is the adapter's backend (a browser reports "WebGPU(Chromium ...)/Vulkan": the part after /)."""
    have = adapter.info.get("backend_type") or ""
    return wanted is None or have == wanted or have.endswith("/" + wanted)


def adapters_of(webgpu: str = "wgpu", backend: str = "auto", adapter_filter: str | None = None) -> list:
    """The adapters of WebGPU implementation ``webgpu`` on ``backend`` whose name contains ``adapter_filter``,
    best first (GPUs before CPUs, native backends before OpenGL)."""
    if backend not in BACKENDS:
        raise DeviceError(f"unknown device backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    adapters = enumerate_adapters(webgpu)
    found = [
        a
        for a in adapters
        if _backend_matches(a, BACKENDS[backend])
        and (not adapter_filter or adapter_filter.lower() in a.summary.lower())
    ]
    if not found:
        seen = "; ".join(describe(a) for a in adapters) or "none"
        raise DeviceError(
            f"no {webgpu} adapter for --device={backend}"
            f"{f' --adapter={adapter_filter!r}' if adapter_filter else ''}; adapters present: {seen}. "
            f"On Debian without a GPU: apt-get install -y mesa-vulkan-drivers libvulkan1"
        )
    found.sort(
        key=lambda a: (_TYPE_RANK.get(a.info.get("adapter_type"), 9), _BACKEND_RANK.get(a.info.get("backend_type"), 9))
    )
    return found


def adapter_profile(adapter, name: str | None = None) -> DeviceProfile:
    limits = {}
    for key, value in adapter.limits.items():
        camel = camel_limit(key)
        # wgpu reports 0 for limits it does not implement (e.g. maxBindGroupsPlusVertexBuffers): keep the default
        if camel in LIMIT_NAMES and isinstance(value, int) and (value > 0 or camel.startswith("min")):
            limits[camel] = value
    return DeviceProfile(name or describe(adapter), limits, webgpu_features(adapter.features))


@dataclass
class Device:
    """An open WebGPU device with the profile it can serve and its compiled pipelines."""

    adapter: object
    device: object
    profile: DeviceProfile
    backend: str
    pipelines: dict = field(default_factory=dict)
    compilations: int = 0
    dispatches: int = 0
    submissions: int = 0  # queue submissions of verified and plain runs (not of timing)
    lost: bool = False
    adapter_filter: str | None = None  # as given to get_device: a fresh device is opened the same way
    webgpu: str = "wgpu"  # the WebGPU implementation (conformance.gpu.backends)

    @property
    def key(self) -> tuple[str, str | None, str]:
        """(backend, adapter filter, WebGPU implementation): what the pool opens it by."""
        return self.backend, self.adapter_filter, self.webgpu

    def clear_pipelines(self) -> None:
        """Forget compiled pipelines (a mutation run compiles a new package for every mutant)."""
        self.pipelines.clear()

    @property
    def summary(self) -> dict:
        info = self.adapter.info
        out = {
            "adapter": info.get("device"),
            "backend": info.get("backend_type"),
            "webgpu": self.webgpu,
            "type": info.get("adapter_type"),
            "driver": info.get("description"),
            "vendor": info.get("vendor"),
            "features": sorted(self.profile.features & set(OPTIONAL_FEATURES)),
            "limits": {k: self.profile.limits[k] for k in RAISED_LIMITS[:5]},
        }
        if info.get("requested"):  # a browser asked for a hardware adapter or for software (--webgpu-adapter)
            out["requested"] = info["requested"]
            if info["requested"] == "gpu" and info.get("adapter_type") == "CPU":
                out["fallback"] = (
                    f"software fallback: a GPU adapter was asked for (--webgpu-adapter gpu), the "
                    f"browser gave WebGPU {info.get('device') or 'a CPU adapter'}"
                )
        return out


def open_device(backend: str = "auto", adapter_filter: str | None = None, webgpu: str = "wgpu") -> Device:
    """A new device on the best matching adapter (use :data:`devices` instead: it owns what it opens)."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences Mesa's warning on headless machines
    adapter = adapters_of(webgpu, backend, adapter_filter)[0]
    profile = adapter_profile(adapter)
    features = [f for f in adapter.features if FEATURE_ALIASES.get(f, f) in OPTIONAL_FEATURES]  # its own names
    required = {kebab_limit(k): profile.limits[k] for k in RAISED_LIMITS}
    try:
        device = adapter.request_device_sync(label="conformance", required_features=features, required_limits=required)
    except Exception as exc:
        raise DeviceError(f"cannot open a device on {describe(adapter)}: {exc}") from None
    granted = DeviceProfile(
        describe(adapter),
        {
            **profile.limits,
            **{
                camel_limit(k): v
                for k, v in device.limits.items()
                if camel_limit(k) in LIMIT_NAMES and isinstance(v, int) and v > 0
            },
        },
        webgpu_features(device.features),
    )
    return Device(adapter, device, granted, backend, adapter_filter=adapter_filter, webgpu=webgpu)


PROBE_SHADER = """
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(4) fn main(@builtin(global_invocation_id) id: vec3<u32>) { data[id.x] = id.x * 3u + 1u; }
"""


def probe_compute(device: Device) -> str | None:
    """None when ``device`` runs a compute shader correctly, else what went wrong (a device without compute,
    such as wgpu's GL backend on some drivers, fails here once instead of in every case)."""
    dev = device.device
    try:
        module = dev.create_shader_module(code=PROBE_SHADER)
        pipeline = dev.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        buf = dev.create_buffer(size=16, usage=STORAGE | COPY_SRC)
        group = dev.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": 16}}],
        )
        encoder = dev.create_command_encoder()
        cpass = encoder.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(1, 1, 1)
        cpass.end()
        dev.queue.submit([encoder.finish()])
        got = list(memoryview(bytes(dev.queue.read_buffer(buf))).cast("I"))
        buf.destroy()
    except Exception as exc:  # any backend's error type: the message is what matters
        return f"{describe(device.adapter)} cannot run compute: {' '.join(str(exc).split())[:500]}"
    return None if got == [1, 4, 7, 10] else f"{describe(device.adapter)} computed {got}, expected [1, 4, 7, 10]"


DEFAULT_RECOVERY_TIMEOUT = 60.0


def recovery_timeout() -> float:
    """Seconds a fresh device waits for abandoned work to end: ``CONFORMANCE_DEVICE_RECOVERY_TIMEOUT``."""
    return env_float(
        "CONFORMANCE_DEVICE_RECOVERY_TIMEOUT", DEFAULT_RECOVERY_TIMEOUT, DeviceError, allow_inf=True, allow_zero=True
    )


@dataclass
class Abandoned:
    """Work left running on an abandoned device: the thread waiting for it, and what it was."""

    thread: threading.Thread
    what: str
    since: float
    deadline: float
    device: object = None  # destroyed once the thread has returned (wgpu objects are not thread-safe)


class DevicePool:
    """The one owner of this process's devices: opens, reuses, replaces after loss or a timeout, releases.

    Nothing else opens or destroys a device or touches its state: the kernel API, the checker, the runtime and
    mutation runs all ask the pool, so a device replaced here is the device every one of them gets next.
    """

    def __init__(self):
        self._devices: dict[tuple[str, str | None, str], Device] = {}
        self._abandoned: list[Abandoned] = []
        self._lock = threading.RLock()

    def get(self, backend: str = "auto", adapter_filter: str | None = None, webgpu: str = "wgpu") -> Device:
        """The device for (backend, filter, WebGPU implementation); a lost one is replaced by a fresh one.

        While a run abandoned on a timeout is still running, a fresh device is opened only once it ends
        (waiting at most :func:`recovery_timeout` seconds for it); past that, :class:`DeviceError` at once.
        """
        key = (backend, adapter_filter, webgpu)
        with self._lock:
            dev = self._devices.get(key)
            if dev is None or dev.lost:
                self._wait_for_abandoned_work()
                dev = self._devices[key] = open_device(backend, adapter_filter, webgpu)
            return dev

    def current(self, device: Device) -> Device:
        """``device`` while it is usable, else the fresh device that replaces it."""
        return device if not device.lost else self.get(*device.key)

    def abandon(self, device: Device, thread: threading.Thread | None, what: str) -> None:
        """Give ``device`` up (a run on it did not finish): mark it lost, destroy it once its work has ended."""
        device.lost = True
        now = time.monotonic()
        if thread is not None and thread.is_alive():
            # the thread may still be inside a call on this device: destroy it only after the thread returns
            self._abandoned.append(Abandoned(thread, what, now, now + recovery_timeout(), device.device))
            return
        _destroy(device.device)

    def abandoned_work(self) -> list[str]:
        """What abandoned runs are still running on the driver (for reports and messages)."""
        return [a.what for a in list(self._abandoned) if a.thread.is_alive()]  # no lock: get() may hold it waiting

    def release(self) -> None:
        """Destroy every idle device (those with work still running are destroyed when it ends)."""
        with self._lock:
            for dev in self._devices.values():
                if not dev.lost:
                    dev.lost = True
                    _destroy(dev.device)
            self._devices.clear()

    def _wait_for_abandoned_work(self) -> None:
        for item in list(self._abandoned):
            remaining = item.deadline - time.monotonic()
            if math.isinf(remaining):
                item.thread.join()
            elif remaining > 0:
                item.thread.join(remaining)
            if item.thread.is_alive():
                age = time.monotonic() - item.since
                raise DeviceError(
                    f"no fresh device: {item.what} timed out {age:.0f} s ago and is still running on "
                    f"the driver, which cannot open or run another device until it ends (waited "
                    f"{item.deadline - item.since:g} s: CONFORMANCE_DEVICE_RECOVERY_TIMEOUT)"
                )
            self._abandoned.remove(item)
            if item.device is not None:
                _destroy(item.device)


def _destroy(wgpu_device) -> None:
    try:
        wgpu_device.destroy()
    except Exception:  # already lost or destroyed
        pass


#: This process's pool; :func:`get_device` and :func:`abandon` are its methods.
devices = DevicePool()
get_device = devices.get
abandon = devices.abandon
