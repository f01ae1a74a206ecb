"""Size guards (issue 10): a call whose buffers exceed the device's limits or this machine's memory is
rejected before anything is allocated, and the message gives the numbers.

The planner refuses what exceeds the plan's profile (``ContractError``, reason ``device-limit``, or the
manifest's own ``buffersFit`` predicate); the runtime refuses, again before any allocation, what exceeds
the device it runs on and a share of the available host memory (``KernelRuntimeError`` of kind
``device-limit`` / ``host-memory``).  Huge inputs are ``np.broadcast_to`` views: their ``nbytes`` is the
full size, but they hold one element.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conformance import BASELINE, ContractError, KernelRuntimeError, NoVariantError
from conformance.engine.manifest import Manifest
from conformance.engine.package import REPO_SPECS, Package
from conformance.engine.profile import ALIGNMENT_LIMITS, DEFAULT_LIMITS, DeviceProfile
from conformance.gpu.device import Device
from conformance.gpu.kernel import Kernel
from conformance.gpu.runtime import Runtime

FASTGELU = REPO_SPECS / "com.microsoft.FastGelu"
HUGE_PROFILE = DeviceProfile(
    "huge", {k: (v if k in ALIGNMENT_LIMITS else 1 << 50) for k, v in DEFAULT_LIMITS.items()}, BASELINE.features
)


class NoAllocation:
    """A wgpu device stand-in: any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"the device was used ({name}) before the size check")


def _device(profile) -> Device:
    return Device(adapter=None, device=NoAllocation(), profile=profile, backend="none")


def _huge(n, dtype=np.float32):
    return np.broadcast_to(np.zeros((), dtype), (n,))


def _kernel(mutate=None) -> Kernel:
    raw = json.loads((FASTGELU / "manifest.json").read_text())
    if mutate:
        mutate(raw)
    return Kernel(Package(FASTGELU, Manifest(raw, file="guard.json")))


def test_the_manifest_rejects_what_its_profile_cannot_hold_with_the_numbers():
    with pytest.raises(NoVariantError) as info:
        _kernel().plan(profile=BASELINE, X=((2**28,), "float32"))
    text = str(info.value)
    assert "buffersFit is false" in text and "= 1073741824" in text and "= 134217728" in text, text


def test_the_planner_rejects_a_binding_past_the_device_limit_even_when_the_manifest_forgets_to():
    def forget(raw):
        raw["derive"]["baseOk"] = raw["derive"]["baseOk"].replace(" and buffersFit", "")

    with pytest.raises(ContractError) as info:
        _kernel(forget).plan(profile=BASELINE, X=((2**28,), "float32"))
    err = info.value
    assert err.reason == "device-limit" and err.argument == "X", err
    assert "1073741824 bytes" in str(err) and "maxStorageBufferBindingSize = 134217728" in str(err), str(err)


def test_the_runtime_refuses_a_buffer_past_the_device_limit_before_allocating():
    kernel = _kernel()
    plan = kernel.plan(profile=HUGE_PROFILE, X=((2**29,), "float32"))  # 2 GiB: fits the plan's profile
    runtime = Runtime(_device(BASELINE), kernel.package)  # not the device's
    with pytest.raises(KernelRuntimeError) as info:
        runtime.run(plan, {"X": _huge(2**29), "bias": None}, verify=True)
    err = info.value
    assert err.kind == "device-limit", err
    assert "2,147,483,648 bytes" in str(err) and "maxBufferSize = 268,435,456" in str(err), str(err)


def test_the_runtime_refuses_a_run_past_the_host_memory_before_allocating():
    kernel = _kernel()
    n = 4 * (2**32 - 1)  # 64 GiB of float32 in, 64 GiB out (the vec4 count still fits its u32)
    plan = kernel.plan(profile=HUGE_PROFILE, X=((n,), "float32"))
    runtime = Runtime(_device(HUGE_PROFILE), kernel.package)
    with pytest.raises(KernelRuntimeError) as info:
        runtime.run(plan, {"X": _huge(n), "bias": None})
    err = info.value
    assert err.kind == "host-memory", err
    assert f"{3 * 4 * n:,} bytes" in str(err) and "CONFORMANCE_HOST_MEMORY_FRACTION" in str(err), str(err)


def test_the_host_memory_share_is_configurable(monkeypatch):
    kernel = _kernel()
    plan = kernel.plan(profile=BASELINE, X=((1024,), "float32"))
    monkeypatch.setenv("CONFORMANCE_HOST_MEMORY_FRACTION", "1e-12")
    with pytest.raises(KernelRuntimeError) as info:
        Runtime(_device(BASELINE), kernel.package).run(plan, {"X": np.zeros(1024, np.float32), "bias": None})
    assert info.value.kind == "host-memory" and "12,288 bytes" in str(info.value), str(info.value)
    monkeypatch.setenv("CONFORMANCE_HOST_MEMORY_FRACTION", "lots")
    with pytest.raises(KernelRuntimeError, match="CONFORMANCE_HOST_MEMORY_FRACTION='lots' must be a positive"):
        Runtime(_device(BASELINE), kernel.package).run(plan, {"X": np.zeros(1024, np.float32), "bias": None})


def test_the_dispatch_time_limit_is_validated(monkeypatch):
    from conformance.gpu.runtime import dispatch_timeout

    monkeypatch.setenv("CONFORMANCE_DISPATCH_TIMEOUT", "0")
    with pytest.raises(KernelRuntimeError, match="CONFORMANCE_DISPATCH_TIMEOUT='0' must be a positive number"):
        dispatch_timeout()
    monkeypatch.setenv("CONFORMANCE_DISPATCH_TIMEOUT", "inf")
    assert dispatch_timeout() == float("inf")
    monkeypatch.delenv("CONFORMANCE_DISPATCH_TIMEOUT")
    assert dispatch_timeout() == 30.0


def test_a_real_device_run_of_ordinary_size_is_untouched_by_the_guards():
    from conformance.gpu.device import get_device

    device = get_device("vulkan")
    kernel = Kernel(Package(FASTGELU, _kernel().manifest), device)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    plan, run = kernel.run(verify=True, X=x)
    assert run.guards_intact == {"Y": True} and run.outputs["Y"].shape == (1000,)
