"""WebGPU through Dawn (Chrome's implementation), via the ctypes bindings of ``dawn-python`` (``pydawn``).

Presents the subset of wgpu-py's object model the suite uses (see conformance/gpu/backends/__init__.py):
``enumerate_adapters()`` -> Adapter -> ``request_device_sync()`` -> Device, Queue, Buffer, ...
All ctypes and pydawn usage stays in this module.

How Dawn's asynchronous API is made synchronous:

* every callback is registered in ``WaitAnyOnly`` mode and its future waited on at once
  (``wgpuInstanceWaitAny``); nothing runs in the background;
* errors: Dawn calls the device's *uncaptured-error* callback synchronously, inside the API call that
  caused the error (checked: CreateShaderModule, CreateBuffer, Finish, Submit, ...). Each call that can
  fail is followed by a look at the errors collected, and the first one is raised as :class:`DawnError`.
  Recording calls on a pass (set_pipeline, dispatch...) are deferred by WebGPU itself: their errors
  surface from ``encoder.finish()``;
* device loss (``destroy()``, a driver reset, ...) arrives through the device-lost callback; afterwards
  every checked call raises :class:`DeviceLostError`, whose text contains "device is lost".

One Dawn instance serves the whole process. A device may be used from several threads, one at a time
(a per-device lock serialises the checked calls, which also keeps each error with the call that made it).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import platform
import re
import threading

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # Mesa warns without it
if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    # Dawn's OpenGL/OpenGLES backends open EGL's default display; headless, only Mesa's surfaceless one exists
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")

from pydawn import webgpu as W  # noqa: E402  (loads libwebgpu_dawn)

#: Encoder-level timestamps (``CommandEncoder.write_timestamp``) need Dawn's ``allow_unsafe_apis`` toggle,
#: which Chrome leaves off. Off by default; with DAWN_ENCODER_TIMESTAMPS=1 adapters offer the pseudo-feature
#: "timestamp-query-inside-encoders" and a device requesting it is opened with that toggle.
ENCODER_TIMESTAMPS = os.environ.get("DAWN_ENCODER_TIMESTAMPS", "") == "1"
ENCODER_TIMESTAMP_FEATURE = "timestamp-query-inside-encoders"

_U32_UNDEFINED = 0xFFFFFFFF
_U64_UNDEFINED = 0xFFFFFFFFFFFFFFFF
_WHOLE_SIZE = _U64_UNDEFINED
_WAIT_FOREVER = _U64_UNDEFINED


class DawnError(RuntimeError):
    """An error reported by Dawn (validation, out of memory, internal, failed request), with Dawn's text."""


class DeviceLostError(DawnError):
    """The device is lost (destroyed, or lost by the driver)."""


# -- small helpers ------------------------------------------------------------------------------------
def _text(view) -> str:
    """A WGPUStringView as str (only valid inside the callback that received it)."""
    if not view.data or view.length == 0:
        return ""
    if view.length == _U64_UNDEFINED:  # WGPU_STRLEN: null-terminated
        return ctypes.cast(view.data, ctypes.c_char_p).value.decode("utf-8", "replace")
    return ctypes.string_at(view.data, view.length).decode("utf-8", "replace")


def _view(text: str | None, keep: list):
    """A WGPUStringView of ``text``; the bytes are appended to ``keep``, which must outlive the call."""
    if not text:
        return W.WGPUStringView(data=None, length=0)
    raw = ctypes.create_string_buffer(text.encode("utf-8"))
    keep.append(raw)
    return W.WGPUStringView(data=ctypes.cast(raw, ctypes.POINTER(ctypes.c_char)), length=len(raw) - 1)


def _chain(struct):
    return ctypes.cast(ctypes.pointer(struct), ctypes.POINTER(W.WGPUChainedStruct))


def _bytes_pointer(data) -> tuple[int, int, object]:
    """(address, nbytes, keep-alive) of any bytes-like object; copies only read-only non-``bytes`` views."""
    if isinstance(data, bytes):
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0, len(data), data
    view = memoryview(data)
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    view = view.cast("B")
    if view.readonly:
        raw = view.tobytes()
        return ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p).value or 0, len(raw), raw
    array = (ctypes.c_ubyte * view.nbytes).from_buffer(view)
    return ctypes.addressof(array), view.nbytes, array


def _callback_type(info_cls):
    return dict(info_cls._fields_)["callback"]


_shutting_down = False


@atexit.register
def _at_exit():
    # releasing Dawn objects while Python tears modules down can call back into freed ctypes thunks
    global _shutting_down
    _shutting_down = True


class _Handle:
    """Owns one reference to a Dawn object, released when the wrapper is collected."""

    _release = None  # the wgpu*Release function of the subclass

    def __del__(self):
        handle, release = getattr(self, "_handle", None), type(self)._release
        if handle and release is not None and not _shutting_down:
            try:
                release(handle)
            except Exception:
                pass
            self._handle = None


# -- the instance -------------------------------------------------------------------------------------
class _Instance:
    """The process's Dawn instance; waits on futures."""

    def __init__(self):
        desc = W.WGPUInstanceDescriptor()
        desc.features.timedWaitAnyEnable = True
        self.handle = W.wgpuCreateInstance(desc)
        if not self.handle:
            raise DawnError("wgpuCreateInstance failed")

    def wait(self, future, what: str) -> None:
        info = W.WGPUFutureWaitInfo(future=future)
        status = W.wgpuInstanceWaitAny(self.handle, 1, ctypes.byref(info), _WAIT_FOREVER)
        if status != W.WGPUWaitStatus_Success:
            raise DawnError(f"{what}: waiting failed ({W.WGPUWaitStatus__enumvalues.get(status, status)})")

    def run(self, start, info_cls, *args, what: str, convert=lambda *a: a):
        """Start an async call whose last argument is ``info_cls`` and return ``convert(*callback args)``.

        ``convert`` runs inside the callback: string views are valid only there.
        """
        out = []
        info = info_cls(mode=W.WGPUCallbackMode_WaitAnyOnly)
        info.callback = _callback_type(info_cls)(lambda *a: out.append(convert(*a)))
        self.wait(start(*args, info), what)
        if not out:
            raise DawnError(f"{what}: the callback did not run")
        return out[0]


_instance: _Instance | None = None
_instance_lock = threading.Lock()


def _get_instance() -> _Instance:
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = _Instance()
        return _instance


# -- names --------------------------------------------------------------------------------------------
def _enum_suffix(table: dict, value: int, prefix: str) -> str:
    return table.get(value, f"{prefix}{value}").split("_", 1)[-1]


#: Standard WebGPU feature names whose spelling the generic CamelCase -> kebab rule would get wrong.
_FEATURE_SPELLING = {
    W.WGPUFeatureName_Depth32FloatStencil8: "depth32float-stencil8",
    W.WGPUFeatureName_RG11B10UfloatRenderable: "rg11b10ufloat-renderable",
    W.WGPUFeatureName_BGRA8UnormStorage: "bgra8unorm-storage",
}


def _kebab(name: str) -> str:
    """``ShaderF16`` -> ``shader-f16``, ``MSAARenderToSingleSampled`` -> ``msaa-render-to-single-sampled``."""
    name = re.sub(r"([A-Z0-9]+)([A-Z][a-z])", r"\1-\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1-\2", name).lower()


def _feature_name(value: int) -> str:
    if value in _FEATURE_SPELLING:
        return _FEATURE_SPELLING[value]
    return _kebab(_enum_suffix(W.WGPUFeatureName__enumvalues, value, "feature-"))


_FEATURE_VALUES = {_feature_name(v): v for v in W.WGPUFeatureName__enumvalues if v != W.WGPUFeatureName_Force32}

#: WGPULimits fields (camelCase) and their C types, in struct order.
_LIMIT_FIELDS = [(n, t) for n, t in W.WGPULimits._fields_ if not n.startswith("PADDING")]


def _limit_key(camel: str) -> str:
    """``maxTextureDimension1D`` -> ``max-texture-dimension-1d`` (wgpu-py's spelling)."""
    return re.sub(r"([a-z])([A-Z0-9])", r"\1-\2", camel).lower()


def _normalise_limit(name: str) -> str:
    return name.replace("-", "").replace("_", "").lower()


_LIMIT_BY_NORMALISED = {_normalise_limit(n): (n, t) for n, t in _LIMIT_FIELDS}


def _limits_dict(limits) -> dict[str, int]:
    out = {}
    for name, ctype in _LIMIT_FIELDS:
        value = getattr(limits, name)
        undefined = _U64_UNDEFINED if ctype is ctypes.c_uint64 else _U32_UNDEFINED
        if value != undefined:  # Dawn leaves deprecated limits undefined
            out[_limit_key(name)] = int(value)
    return out


def _features_list(getter, handle) -> list[int]:
    supported = W.WGPUSupportedFeatures()
    getter(handle, ctypes.byref(supported))
    try:
        return [supported.features[i] for i in range(supported.featureCount)]
    finally:
        W.wgpuSupportedFeaturesFreeMembers(supported)


_ADAPTER_TYPES = {
    W.WGPUAdapterType_DiscreteGPU: "DiscreteGPU",
    W.WGPUAdapterType_IntegratedGPU: "IntegratedGPU",
    W.WGPUAdapterType_CPU: "CPU",
    W.WGPUAdapterType_Unknown: "Unknown",
}
_BACKEND_TYPES = {v: _enum_suffix(W.WGPUBackendType__enumvalues, v, "") for v in W.WGPUBackendType__enumvalues}
_ERROR_KINDS = {
    W.WGPUErrorType_Validation: "Validation error",
    W.WGPUErrorType_OutOfMemory: "Out of memory error",
    W.WGPUErrorType_Internal: "Internal error",
    W.WGPUErrorType_Unknown: "Unknown error",
    W.WGPUErrorType_DeviceLost: "device lost",
}
_BINDING_TYPES = {
    "uniform": W.WGPUBufferBindingType_Uniform,
    "storage": W.WGPUBufferBindingType_Storage,
    "read-only-storage": W.WGPUBufferBindingType_ReadOnlyStorage,
}
_QUERY_TYPES = {"timestamp": W.WGPUQueryType_Timestamp, "occlusion": W.WGPUQueryType_Occlusion}
_MESSAGE_TYPES = {
    W.WGPUCompilationMessageType_Error: "error",
    W.WGPUCompilationMessageType_Warning: "warning",
    W.WGPUCompilationMessageType_Info: "info",
}


def _platform_backends() -> list[int]:
    system = platform.system()
    if system == "Darwin":
        return [W.WGPUBackendType_Metal]
    if system == "Windows":
        return [W.WGPUBackendType_D3D12, W.WGPUBackendType_D3D11, W.WGPUBackendType_Vulkan]
    return [W.WGPUBackendType_Vulkan, W.WGPUBackendType_OpenGL, W.WGPUBackendType_OpenGLES]


# -- adapters -----------------------------------------------------------------------------------------
def enumerate_adapters(backends: list[str] | None = None) -> list["Adapter"]:
    """Every adapter Dawn offers, one entry per physical adapter and backend.

    Dawn's C API has no enumeration (only RequestAdapter, which picks one), so this requests an adapter
    for each backend x feature level (core, then compatibility) x power preference and drops duplicates.
    An adapter found only at the compatibility level (Dawn's GL backends) is kept as such. Limitation: of
    two devices with the same backend and power class (two discrete GPUs), only Dawn's first is reached.
    ``backends`` restricts by name ("Vulkan", "OpenGL", ...). Dawn's Null backend (computes nothing) is
    never listed.
    """
    instance = _get_instance()
    wanted = _platform_backends()
    if backends is not None:
        names = {b.lower() for b in backends}
        wanted = [b for b in wanted if _BACKEND_TYPES[b].lower() in names]
    found, seen = [], set()
    for backend in wanted:
        for level in (W.WGPUFeatureLevel_Core, W.WGPUFeatureLevel_Compatibility):
            for power in (W.WGPUPowerPreference_HighPerformance, W.WGPUPowerPreference_LowPower):
                options = W.WGPURequestAdapterOptions(backendType=backend, featureLevel=level, powerPreference=power)
                status, handle = instance.run(
                    W.wgpuInstanceRequestAdapter2,
                    W.WGPURequestAdapterCallbackInfo2,
                    instance.handle,
                    ctypes.byref(options),
                    what="RequestAdapter",
                    convert=lambda st, a, msg, u1, u2: (st, a),
                )
                if status != W.WGPURequestAdapterStatus_Success or not handle:
                    continue
                adapter = Adapter(handle, level)
                key = tuple(
                    adapter.info[k] for k in ("backend_type", "vendor_id", "device_id", "device", "description")
                )
                if key not in seen:  # a duplicate's handle is released with its wrapper
                    seen.add(key)
                    found.append(adapter)
    return found


class Adapter(_Handle):
    """A Dawn adapter: ``info``, ``summary``, ``limits``, ``features``, ``request_device_sync``."""

    _release = W.wgpuAdapterRelease

    def __init__(self, handle, feature_level: int):
        self._handle = handle
        self.feature_level = "core" if feature_level == W.WGPUFeatureLevel_Core else "compatibility"
        info = W.WGPUAdapterInfo()
        if W.wgpuAdapterGetInfo(handle, ctypes.byref(info)) != W.WGPUStatus_Success:
            raise DawnError("wgpuAdapterGetInfo failed")
        try:
            self.info = {
                "vendor": _text(info.vendor),
                "architecture": _text(info.architecture),
                "device": _text(info.device),
                "description": _text(info.description),
                "vendor_id": int(info.vendorID),
                "device_id": int(info.deviceID),
                "adapter_type": _ADAPTER_TYPES.get(info.adapterType, "Unknown"),
                "backend_type": _BACKEND_TYPES.get(info.backendType, str(info.backendType)),
                "feature_level": self.feature_level,
            }
        finally:
            W.wgpuAdapterInfoFreeMembers(info)
        supported = W.WGPUSupportedLimits()
        if W.wgpuAdapterGetLimits(handle, ctypes.byref(supported)) != W.WGPUStatus_Success:
            raise DawnError("wgpuAdapterGetLimits failed")
        self.limits = _limits_dict(supported.limits)
        self.features = {_feature_name(f) for f in _features_list(W.wgpuAdapterGetFeatures, handle)}
        if ENCODER_TIMESTAMPS and "timestamp-query" in self.features:
            self.features.add(ENCODER_TIMESTAMP_FEATURE)

    @property
    def summary(self) -> str:
        i = self.info
        level = " (compatibility)" if self.feature_level != "core" else ""
        return f"{i['device']} ({i['adapter_type']}) via {i['backend_type']}{level}"

    def __repr__(self):
        return f"<dawn Adapter {self.summary}>"

    def request_device_sync(
        self, label: str = "", required_features=(), required_limits=None, default_queue=None
    ) -> "Device":
        """Open a device with these features (kebab-case names) and limits (kebab-case or camelCase keys).

        Raises DawnError with Dawn's message when refused (unknown feature, limit above the adapter's...).
        """
        keep: list = []
        features = []
        unsafe = False
        for name in required_features or ():
            name = str(name)
            if name == ENCODER_TIMESTAMP_FEATURE:
                if name not in self.features:
                    raise DawnError(
                        f"feature {name!r} is not offered by this adapter (Dawn needs the "
                        f"allow_unsafe_apis toggle for it: set DAWN_ENCODER_TIMESTAMPS=1)"
                    )
                unsafe = True
                continue
            if name not in _FEATURE_VALUES:
                raise DawnError(f"unknown feature {name!r}; Dawn knows: {', '.join(sorted(_FEATURE_VALUES))}")
            features.append(_FEATURE_VALUES[name])
        desc = W.WGPUDeviceDescriptor(label=_view(label, keep))
        feature_array = (W.WGPUFeatureName * max(1, len(features)))(*features)
        desc.requiredFeatureCount, desc.requiredFeatures = len(features), feature_array

        limits = W.WGPURequiredLimits()
        for name, ctype in _LIMIT_FIELDS:  # undefined = the default limit
            setattr(limits.limits, name, _U64_UNDEFINED if ctype is ctypes.c_uint64 else _U32_UNDEFINED)
        for key, value in (required_limits or {}).items():
            field = _LIMIT_BY_NORMALISED.get(_normalise_limit(str(key)))
            if field is None:
                raise DawnError(f"unknown limit {key!r}")
            setattr(limits.limits, field[0], int(value))
        desc.requiredLimits = ctypes.pointer(limits)

        # timestamps in full nanosecond precision (Chrome quantizes them to 100 us unless flagged)
        enabled = [b"allow_unsafe_apis"] if unsafe else []
        disabled = [b"timestamp_quantization"]
        toggles = W.WGPUDawnTogglesDescriptor()
        toggles.chain.sType = W.WGPUSType_DawnTogglesDescriptor
        for attr, names in (("enabled", enabled), ("disabled", disabled)):
            raw = [ctypes.create_string_buffer(n) for n in names]
            keep.extend(raw)
            array = (ctypes.POINTER(ctypes.c_char) * max(1, len(raw)))(
                *[ctypes.cast(r, ctypes.POINTER(ctypes.c_char)) for r in raw]
            )
            keep.append(array)
            setattr(toggles, f"{attr}ToggleCount", len(raw))
            setattr(toggles, f"{attr}Toggles", array)
        desc.nextInChain = _chain(toggles)

        state = _DeviceState()
        desc.deviceLostCallbackInfo2.mode = W.WGPUCallbackMode_AllowSpontaneous
        desc.deviceLostCallbackInfo2.callback = state.lost_callback
        desc.uncapturedErrorCallbackInfo2.callback = state.error_callback

        instance = _get_instance()
        status, handle, message = instance.run(
            W.wgpuAdapterRequestDevice2,
            W.WGPURequestDeviceCallbackInfo2,
            self._handle,
            ctypes.byref(desc),
            what="RequestDevice",
            convert=lambda st, dev, msg, u1, u2: (st, dev, _text(msg)),
        )
        if status != W.WGPURequestDeviceStatus_Success or not handle:
            raise DawnError(
                f"RequestDevice failed ({_enum_suffix(W.WGPURequestDeviceStatus__enumvalues, status, '')}): {message}"
            )
        return Device(self, handle, state, label, encoder_timestamps=unsafe)

    request_device = request_device_sync


# -- the device ---------------------------------------------------------------------------------------
class _DeviceState:
    """What Dawn's device callbacks report: errors not yet raised, and loss.

    Its ctypes callbacks are kept in a module list forever: Dawn may call the lost callback as late as
    the device's final release.
    """

    def __init__(self):
        self.errors: list[tuple[int, str]] = []
        self.lost: str | None = None
        self.log: list[str] = []
        self.lost_callback = _callback_type(W.WGPUDeviceLostCallbackInfo2)(self._on_lost)
        self.error_callback = _callback_type(W.WGPUUncapturedErrorCallbackInfo2)(self._on_error)
        self.log_callback = W.WGPULoggingCallback(self._on_log)
        _KEEP_CALLBACKS.append(self)

    def _on_lost(self, device, reason, message, u1, u2):
        why = _enum_suffix(W.WGPUDeviceLostReason__enumvalues, reason, "")
        self.lost = f"device is lost ({why}): {_text(message).strip()}"

    def _on_error(self, device, kind, message, u1, u2):
        self.errors.append((kind, _text(message).strip()))

    def _on_log(self, kind, message, userdata):
        if len(self.log) < 1000:
            self.log.append(f"{_enum_suffix(W.WGPULoggingType__enumvalues, kind, '')}: {_text(message).strip()}")


_KEEP_CALLBACKS: list[_DeviceState] = []


class Device(_Handle):
    """A Dawn device with wgpu-py's method names (the subset the suite uses)."""

    _release = W.wgpuDeviceRelease

    def __init__(self, adapter: Adapter, handle, state: _DeviceState, label: str, *, encoder_timestamps: bool):
        self._handle, self._state, self.adapter, self.label = handle, state, adapter, label
        self._lock = threading.RLock()
        W.wgpuDeviceSetLoggingCallback(handle, state.log_callback, None)
        supported = W.WGPUSupportedLimits()
        W.wgpuDeviceGetLimits(handle, ctypes.byref(supported))
        self.limits = _limits_dict(supported.limits)
        self.features = {_feature_name(f) for f in _features_list(W.wgpuDeviceGetFeatures, handle)}
        if encoder_timestamps:
            self.features.add(ENCODER_TIMESTAMP_FEATURE)
        self.queue = Queue(self, W.wgpuDeviceGetQueue(handle))

    def __repr__(self):
        return f"<dawn Device {self.adapter.summary}{' LOST' if self._state.lost else ''}>"

    # -- errors --
    @property
    def lost_info(self) -> str | None:
        """None, or the device-lost message."""
        return self._state.lost

    @property
    def log(self) -> list[str]:
        """Dawn's log messages for this device (warnings, ...)."""
        return self._state.log

    def _raise_pending(self) -> None:
        state = self._state
        if state.lost:
            state.errors.clear()
            raise DeviceLostError(state.lost)
        if state.errors:
            errors, state.errors[:] = list(state.errors), []
            kind, message = errors[0]
            text = f"{_ERROR_KINDS.get(kind, 'Error')}: {message}"
            if len(errors) > 1:
                text += (
                    f"\n(and {len(errors) - 1} more error(s): "
                    + "; ".join(m.splitlines()[0] for _, m in errors[1:])
                    + ")"
                )
            raise (DeviceLostError if kind == W.WGPUErrorType_DeviceLost else DawnError)(text)

    def _call(self, fn, *args):
        """``fn(*args)`` with the errors it reports (synchronously, through the callback) raised."""
        with self._lock:
            if self._state.lost:
                raise DeviceLostError(self._state.lost)
            result = fn(*args)
            self._raise_pending()
            return result

    def destroy(self) -> None:
        """Destroy the device now (its buffers' memory is freed; it becomes lost with reason Destroyed)."""
        with self._lock:
            W.wgpuDeviceDestroy(self._handle)

    def force_loss(self, message: str = "forced loss") -> None:
        """Simulate a driver-side loss (Dawn's ForceLoss), for testing recovery."""
        keep: list = []
        with self._lock:
            W.wgpuDeviceForceLoss(self._handle, W.WGPUDeviceLostReason_Unknown, _view(message, keep))

    def timestamp_period_ns(self) -> float:
        """Dawn converts timestamp queries to nanoseconds itself."""
        return 1.0

    # -- creation --
    def create_buffer(self, *, size: int, usage: int, mapped_at_creation: bool = False, label: str = ""):
        keep: list = []
        desc = W.WGPUBufferDescriptor(
            label=_view(label, keep), size=int(size), usage=int(usage), mappedAtCreation=bool(mapped_at_creation)
        )
        handle = self._call(W.wgpuDeviceCreateBuffer, self._handle, ctypes.byref(desc))
        buffer = Buffer(self, handle, int(size), int(usage), label)
        if mapped_at_creation:
            buffer._mapped = (0, int(size), W.WGPUMapMode_Write)
        return buffer

    def create_buffer_with_data(self, *, data, usage: int, label: str = ""):
        """A buffer holding ``data`` (its size rounded up to 4 bytes, as WebGPU requires when mapped)."""
        address, nbytes, keep = _bytes_pointer(data)
        size = max(4, (nbytes + 3) // 4 * 4)
        buffer = self.create_buffer(size=size, usage=usage, mapped_at_creation=True, label=label)
        target = W.wgpuBufferGetMappedRange(buffer._handle, 0, size)
        if not target:
            raise DawnError("create_buffer_with_data: the new buffer has no mapped range")
        ctypes.memmove(target, address, nbytes)
        del keep
        buffer.unmap()
        return buffer

    def create_shader_module(self, *, code: str, label: str = "", compilation_hints=None):
        """Compile WGSL. On failure raises DawnError: one ``wgsl:LINE:COL type: message`` line per compiler
        message, then Dawn's own error text (Tint's formatted diagnostics)."""
        keep: list = []
        source = W.WGPUShaderSourceWGSL(code=_view(code, keep))
        source.chain.sType = W.WGPUSType_ShaderSourceWGSL
        desc = W.WGPUShaderModuleDescriptor(label=_view(label, keep), nextInChain=_chain(source))
        with self._lock:
            if self._state.lost:
                raise DeviceLostError(self._state.lost)
            handle = W.wgpuDeviceCreateShaderModule(self._handle, ctypes.byref(desc))
            module = ShaderModule(self, handle, label)
            try:
                self._raise_pending()
            except DeviceLostError:
                raise
            except DawnError as exc:
                lines = [
                    f"wgsl:{m['line']}:{m['col']} {m['type']}: {m['message']}" for m in module.get_compilation_info()
                ]
                raise DawnError("\n".join(lines + [str(exc)])) from None
        return module

    def create_bind_group_layout(self, *, entries, label: str = ""):
        keep: list = []
        array = (W.WGPUBindGroupLayoutEntry * max(1, len(entries)))()
        for slot, entry in zip(array, entries):
            slot.binding, slot.visibility = int(entry["binding"]), int(entry["visibility"])
            if "buffer" not in entry:
                raise DawnError("this backend binds buffers only (no samplers, textures, storage textures)")
            spec = entry["buffer"]
            kind = spec.get("type", "uniform")
            if kind not in _BINDING_TYPES:
                raise DawnError(f"unknown buffer binding type {kind!r}; expected one of {list(_BINDING_TYPES)}")
            slot.buffer.type = _BINDING_TYPES[kind]
            slot.buffer.hasDynamicOffset = bool(spec.get("has_dynamic_offset", False))
            slot.buffer.minBindingSize = int(spec.get("min_binding_size", 0))
        desc = W.WGPUBindGroupLayoutDescriptor(label=_view(label, keep), entryCount=len(entries), entries=array)
        return BindGroupLayout(self, self._call(W.wgpuDeviceCreateBindGroupLayout, self._handle, ctypes.byref(desc)))

    def create_pipeline_layout(self, *, bind_group_layouts, label: str = ""):
        keep: list = []
        handles = (W.WGPUBindGroupLayout * max(1, len(bind_group_layouts)))(
            *[layout._handle for layout in bind_group_layouts]
        )
        desc = W.WGPUPipelineLayoutDescriptor(
            label=_view(label, keep), bindGroupLayoutCount=len(bind_group_layouts), bindGroupLayouts=handles
        )
        return PipelineLayout(self, self._call(W.wgpuDeviceCreatePipelineLayout, self._handle, ctypes.byref(desc)))

    def create_compute_pipeline(self, *, layout, compute: dict, label: str = ""):
        """``layout`` is a PipelineLayout or "auto"; ``compute`` = {"module", "entry_point", "constants"}."""
        keep: list = []
        constants = dict(compute.get("constants") or {})
        constant_array = (W.WGPUConstantEntry * max(1, len(constants)))()
        for slot, (key, value) in zip(constant_array, constants.items()):
            slot.key, slot.value = _view(str(key), keep), float(value)
        stage = W.WGPUComputeState(
            module=compute["module"]._handle,
            entryPoint=_view(compute.get("entry_point") or "", keep),
            constantCount=len(constants),
            constants=constant_array,
        )
        desc = W.WGPUComputePipelineDescriptor(
            label=_view(label, keep), compute=stage, layout=None if layout == "auto" else layout._handle
        )
        return ComputePipeline(
            self, self._call(W.wgpuDeviceCreateComputePipeline, self._handle, ctypes.byref(desc)), label
        )

    def create_bind_group(self, *, layout, entries, label: str = ""):
        """``entries``: [{"binding": i, "resource": {"buffer": buf, "offset": 0, "size": n}}] (or resource=buf)."""
        keep: list = []
        array = (W.WGPUBindGroupEntry * max(1, len(entries)))()
        for slot, entry in zip(array, entries):
            resource = entry["resource"]
            if isinstance(resource, Buffer):
                resource = {"buffer": resource}
            if "buffer" not in resource:
                raise DawnError("this backend binds buffers only")
            buffer = resource["buffer"]
            size = resource.get("size")
            slot.binding, slot.buffer = int(entry["binding"]), buffer._handle
            slot.offset, slot.size = int(resource.get("offset", 0)), _WHOLE_SIZE if size is None else int(size)
        desc = W.WGPUBindGroupDescriptor(
            label=_view(label, keep), layout=layout._handle, entryCount=len(entries), entries=array
        )
        return BindGroup(self, self._call(W.wgpuDeviceCreateBindGroup, self._handle, ctypes.byref(desc)))

    def create_command_encoder(self, *, label: str = ""):
        keep: list = []
        desc = W.WGPUCommandEncoderDescriptor(label=_view(label, keep))
        return CommandEncoder(self, self._call(W.wgpuDeviceCreateCommandEncoder, self._handle, ctypes.byref(desc)))

    def create_query_set(self, *, type="timestamp", count: int, label: str = ""):
        keep: list = []
        kind = _QUERY_TYPES.get(str(getattr(type, "value", type)).lower(), type)
        if not isinstance(kind, int):
            raise DawnError(f"unknown query type {type!r}")
        desc = W.WGPUQuerySetDescriptor(label=_view(label, keep), type=kind, count=int(count))
        return QuerySet(
            self, self._call(W.wgpuDeviceCreateQuerySet, self._handle, ctypes.byref(desc)), kind, int(count)
        )


class _Child(_Handle):
    def __init__(self, device: Device, handle):
        self._device, self._handle = device, handle


class ShaderModule(_Child):
    _release = W.wgpuShaderModuleRelease

    def __init__(self, device, handle, label=""):
        super().__init__(device, handle)
        self.label = label

    def get_compilation_info(self) -> list[dict]:
        """Tint's messages: [{"type", "message", "line", "col", "offset", "length"}] (lines and columns 1-based)."""

        def convert(status, info, u1, u2):
            if status != W.WGPUCompilationInfoRequestStatus_Success or not info:
                return []
            out = []
            for i in range(info.contents.messageCount):
                m = info.contents.messages[i]
                out.append(
                    {
                        "type": _MESSAGE_TYPES.get(m.type, str(m.type)),
                        "message": _text(m.message),
                        "line": int(m.lineNum),
                        "col": int(m.linePos),
                        "offset": int(m.offset),
                        "length": int(m.length),
                    }
                )
            return out

        return _get_instance().run(
            W.wgpuShaderModuleGetCompilationInfo2,
            W.WGPUCompilationInfoCallbackInfo2,
            self._handle,
            what="GetCompilationInfo",
            convert=convert,
        )


class BindGroupLayout(_Child):
    _release = W.wgpuBindGroupLayoutRelease


class PipelineLayout(_Child):
    _release = W.wgpuPipelineLayoutRelease


class BindGroup(_Child):
    _release = W.wgpuBindGroupRelease


class ComputePipeline(_Child):
    _release = W.wgpuComputePipelineRelease

    def __init__(self, device, handle, label=""):
        super().__init__(device, handle)
        self.label = label

    def get_bind_group_layout(self, index: int) -> BindGroupLayout:
        return BindGroupLayout(
            self._device, self._device._call(W.wgpuComputePipelineGetBindGroupLayout, self._handle, int(index))
        )


class QuerySet(_Child):
    _release = W.wgpuQuerySetRelease

    def __init__(self, device, handle, kind, count):
        super().__init__(device, handle)
        self.type = "timestamp" if kind == W.WGPUQueryType_Timestamp else "occlusion"
        self.count = count

    def destroy(self) -> None:
        W.wgpuQuerySetDestroy(self._handle)


# -- buffers ------------------------------------------------------------------------------------------
class Buffer(_Child):
    _release = W.wgpuBufferRelease

    def __init__(self, device, handle, size, usage, label=""):
        super().__init__(device, handle)
        self.size, self.usage, self.label = size, usage, label
        self._mapped: tuple[int, int, int] | None = None  # (offset, size, mode) while mapped

    def map_sync(self, mode: int = 1, offset: int = 0, size: int | None = None) -> None:
        """Map for reading (mode 1) or writing (mode 2), waiting for the GPU; raises on failure or loss."""
        if isinstance(mode, str):
            mode = {"read": W.WGPUMapMode_Read, "write": W.WGPUMapMode_Write}[mode.lower()]
        size = self.size - offset if size is None else size
        device = self._device
        with device._lock:
            if device._state.lost:
                raise DeviceLostError(device._state.lost)
            status, message = _get_instance().run(
                W.wgpuBufferMapAsync2,
                W.WGPUBufferMapCallbackInfo2,
                self._handle,
                int(mode),
                int(offset),
                int(size),
                what="MapAsync",
                convert=lambda st, msg, u1, u2: (st, _text(msg)),
            )
            device._raise_pending()  # loss or a validation error explains a failure best
            if status != W.WGPUMapAsyncStatus_Success:
                raise DawnError(
                    f"MapAsync failed ({_enum_suffix(W.WGPUMapAsyncStatus__enumvalues, status, '')}): {message}"
                )
        self._mapped = (int(offset), int(size), int(mode))

    def _range(self, buffer_offset, size):
        if self._mapped is None:
            raise DawnError("the buffer is not mapped")
        start, length, mode = self._mapped
        offset = start if buffer_offset is None else int(buffer_offset)
        size = start + length - offset if size is None else int(size)
        get = W.wgpuBufferGetConstMappedRange if mode == W.WGPUMapMode_Read else W.wgpuBufferGetMappedRange
        pointer = get(self._handle, offset, size)
        if not pointer and size:
            raise DawnError(f"no mapped range at offset {offset}, size {size} (mapped: offset {start}, size {length})")
        return pointer, size

    def read_mapped(self, buffer_offset: int | None = None, size: int | None = None, *, copy: bool = True) -> bytes:
        """A copy of the mapped bytes (``copy`` is accepted for wgpu-py compatibility; always copies)."""
        pointer, size = self._range(buffer_offset, size)
        return ctypes.string_at(pointer, size) if size else b""

    def write_mapped(self, data, buffer_offset: int | None = None) -> None:
        address, nbytes, keep = _bytes_pointer(data)
        pointer, _ = self._range(buffer_offset, nbytes)
        ctypes.memmove(pointer, address, nbytes)

    def unmap(self) -> None:
        """Never raises: unmapping is valid in every state (also on a lost device)."""
        self._mapped = None
        W.wgpuBufferUnmap(self._handle)

    def destroy(self) -> None:
        """Free the GPU memory now (idempotent; never raises). The wrapper's reference goes when it is collected."""
        self._mapped = None
        W.wgpuBufferDestroy(self._handle)


# -- encoding and submission --------------------------------------------------------------------------
class CommandBuffer(_Child):
    _release = W.wgpuCommandBufferRelease


class ComputePass(_Child):
    """Recording calls are not checked one by one: WebGPU reports their errors at ``encoder.finish()``.
    (Dawn holds its own references to everything recorded, so no Python object needs to stay alive.)"""

    _release = W.wgpuComputePassEncoderRelease

    def set_pipeline(self, pipeline) -> None:
        W.wgpuComputePassEncoderSetPipeline(self._handle, pipeline._handle)

    def set_bind_group(
        self,
        index: int,
        bind_group,
        dynamic_offsets_data=(),
        dynamic_offsets_data_start=None,
        dynamic_offsets_data_length=None,
    ) -> None:
        offsets = list(dynamic_offsets_data)
        if dynamic_offsets_data_start is not None:
            offsets = offsets[dynamic_offsets_data_start : dynamic_offsets_data_start + dynamic_offsets_data_length]
        array = (ctypes.c_uint32 * len(offsets))(*offsets) if offsets else None
        W.wgpuComputePassEncoderSetBindGroup(self._handle, int(index), bind_group._handle, len(offsets), array)

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        W.wgpuComputePassEncoderDispatchWorkgroups(self._handle, int(x), int(y), int(z))

    def dispatch_workgroups_indirect(self, indirect_buffer, indirect_offset: int) -> None:
        W.wgpuComputePassEncoderDispatchWorkgroupsIndirect(self._handle, indirect_buffer._handle, int(indirect_offset))

    def end(self) -> None:
        W.wgpuComputePassEncoderEnd(self._handle)


class CommandEncoder(_Child):
    _release = W.wgpuCommandEncoderRelease

    def begin_compute_pass(self, *, label: str = "", timestamp_writes: dict | None = None) -> ComputePass:
        """``timestamp_writes`` = {"query_set", "beginning_of_pass_write_index", "end_of_pass_write_index"}
        (an index may be left out or None)."""
        keep: list = []
        desc = W.WGPUComputePassDescriptor(label=_view(label, keep))
        if timestamp_writes:

            def index(key):
                value = timestamp_writes.get(key)
                return _U32_UNDEFINED if value is None else int(value)  # WGPU_QUERY_SET_INDEX_UNDEFINED

            writes = W.WGPUComputePassTimestampWrites(
                querySet=timestamp_writes["query_set"]._handle,
                beginningOfPassWriteIndex=index("beginning_of_pass_write_index"),
                endOfPassWriteIndex=index("end_of_pass_write_index"),
            )
            desc.timestampWrites = ctypes.pointer(writes)
        return ComputePass(self._device, W.wgpuCommandEncoderBeginComputePass(self._handle, ctypes.byref(desc)))

    def copy_buffer_to_buffer(
        self, source, source_offset: int, destination, destination_offset: int, size: int
    ) -> None:
        W.wgpuCommandEncoderCopyBufferToBuffer(
            self._handle, source._handle, int(source_offset), destination._handle, int(destination_offset), int(size)
        )

    def clear_buffer(self, buffer, offset: int = 0, size: int | None = None) -> None:
        W.wgpuCommandEncoderClearBuffer(
            self._handle, buffer._handle, int(offset), _WHOLE_SIZE if size is None else int(size)
        )

    def resolve_query_set(
        self, query_set, first_query: int, query_count: int, destination, destination_offset: int
    ) -> None:
        W.wgpuCommandEncoderResolveQuerySet(
            self._handle,
            query_set._handle,
            int(first_query),
            int(query_count),
            destination._handle,
            int(destination_offset),
        )

    def write_timestamp(self, query_set, query_index: int) -> None:
        """Encoder-level timestamp: valid only on a device opened with "timestamp-query-inside-encoders"
        (otherwise finish() raises Dawn's "writeTimestamp requires enabling toggle allow_unsafe_apis")."""
        W.wgpuCommandEncoderWriteTimestamp(self._handle, query_set._handle, int(query_index))

    _write_timestamp = write_timestamp

    def finish(self, *, label: str = "") -> CommandBuffer:
        """Raises the errors of everything recorded (WebGPU defers encoding errors to here)."""
        keep: list = []
        desc = W.WGPUCommandBufferDescriptor(label=_view(label, keep))
        return CommandBuffer(
            self._device, self._device._call(W.wgpuCommandEncoderFinish, self._handle, ctypes.byref(desc))
        )


class Queue(_Child):
    _release = W.wgpuQueueRelease

    def submit(self, command_buffers) -> None:
        handles = [cb._handle for cb in command_buffers]
        array = (W.WGPUCommandBuffer * max(1, len(handles)))(*handles)
        self._device._call(W.wgpuQueueSubmit, self._handle, len(handles), array)

    def write_buffer(self, buffer, buffer_offset: int, data, data_offset: int = 0, size: int | None = None) -> None:
        address, nbytes, keep = _bytes_pointer(data)
        size = nbytes - data_offset if size is None else int(size)
        self._device._call(
            W.wgpuQueueWriteBuffer, self._handle, buffer._handle, int(buffer_offset), address + int(data_offset), size
        )

    def read_buffer(self, buffer, buffer_offset: int = 0, size: int | None = None) -> bytes:
        """Copy (part of) a COPY_SRC buffer to a mappable one, wait, and return the bytes."""
        size = buffer.size - buffer_offset if size is None else int(size)
        padded = (size + 3) // 4 * 4
        device = self._device
        staging = device.create_buffer(size=max(4, padded), usage=W.WGPUBufferUsage_MapRead | W.WGPUBufferUsage_CopyDst)
        try:
            encoder = device.create_command_encoder()
            encoder.copy_buffer_to_buffer(buffer, buffer_offset, staging, 0, padded)
            self.submit([encoder.finish()])
            staging.map_sync(W.WGPUMapMode_Read, 0, max(4, padded))
            return staging.read_mapped(0, size)
        finally:
            staging.unmap()
            staging.destroy()

    def on_submitted_work_done_sync(self) -> None:
        """Wait until the GPU has finished everything submitted so far."""
        device = self._device
        with device._lock:
            if device._state.lost:
                raise DeviceLostError(device._state.lost)
            status = _get_instance().run(
                W.wgpuQueueOnSubmittedWorkDone2,
                W.WGPUQueueWorkDoneCallbackInfo2,
                self._handle,
                what="OnSubmittedWorkDone",
                convert=lambda st, u1, u2: st,
            )
            device._raise_pending()
            if status != W.WGPUQueueWorkDoneStatus_Success:
                raise DawnError(
                    f"OnSubmittedWorkDone failed ({_enum_suffix(W.WGPUQueueWorkDoneStatus__enumvalues, status, '')})"
                )
