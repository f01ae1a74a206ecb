"""Chromium's WebGPU takes the machine's GPU where it has one (``--webgpu-adapter``, default auto): the flags that
decide it, how auto resolves, and what the report says of a software fallback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conformance.certify.report import device_line
from conformance.engine.profile import DeviceProfile
from conformance.errors import DeviceError
from conformance.gpu.backends import chromium
from conformance.gpu.device import Device
from tests.conftest import UNUSED_PLUGINS


def test_a_gpu_is_asked_for_with_the_flags_that_keep_webgpu_off_swiftshader():
    """Without --disable-vulkan-surface a headless Chromium on a GPU machine silently offers SwiftShader."""
    gpu = chromium.launch_flags("gpu")
    assert {"--disable-vulkan-surface", "--use-angle=vulkan", "--use-vulkan=native", "--ignore-gpu-blocklist"} <= set(
        gpu
    )
    assert "--use-webgpu-adapter=swiftshader" not in gpu
    software = chromium.launch_flags("software")
    assert "--use-webgpu-adapter=swiftshader" in software and "--disable-vulkan-surface" not in software
    assert set(chromium.FLAGS) <= set(gpu) & set(software)  # WebGPU itself on, either way


@pytest.mark.parametrize("found, resolved", [("NVIDIA H200", "gpu"), (None, "software")])
def test_auto_takes_a_hardware_vulkan_adapter_where_there_is_one(found, resolved):
    assert chromium.resolve_adapter_request("auto", lambda: found) == resolved
    assert chromium.resolve_adapter_request("software", lambda: "NVIDIA H200") == "software"
    assert chromium.resolve_adapter_request("gpu", lambda: None) == "gpu"


def test_an_unknown_request_is_refused_naming_the_option():
    with pytest.raises(DeviceError, match="--webgpu-adapter 'fast': expected one of auto, gpu, software"):
        chromium.resolve_adapter_request("fast")


def test_a_browser_the_suite_does_not_launch_is_asked_nothing_it_cannot_check():
    """A Playwright server's machine is not this one (auto asks nothing, an explicit request is passed on); a
    Chrome over CDP was launched by someone else: its report says what the page saw."""
    gpu_here = lambda: "NVIDIA H200"  # noqa: E731
    assert chromium.adapter_request_for("auto", endpoint=None, cdp=None, find_gpu=gpu_here) == "gpu"
    assert chromium.adapter_request_for("auto", endpoint="ws://h:1", cdp=None, find_gpu=gpu_here) is None
    assert chromium.adapter_request_for("gpu", endpoint="ws://h:1", cdp=None) == "gpu"
    assert chromium.adapter_request_for("gpu", endpoint=None, cdp="http://h:9222") is None


class _Adapter:
    def __init__(self, requested, kind, name):
        self.info = {
            "device": name,
            "adapter_type": kind,
            "backend_type": "WebGPU(Chromium 156)/Vulkan",
            "description": "",
            "vendor": "",
            "requested": requested,
        }


@pytest.mark.parametrize(
    "requested, kind, fallback", [("gpu", "CPU", True), ("gpu", "DiscreteGPU", False), ("software", "CPU", False)]
)
def test_the_device_line_says_when_a_gpu_was_asked_for_and_software_answered(requested, kind, fallback):
    device = Device(
        _Adapter(requested, kind, "SwiftShader Device (Subzero)" if kind == "CPU" else "NVIDIA H200"),
        None,
        DeviceProfile("page", {}, frozenset()),
        "vulkan",
        webgpu="chromium",
    )
    summary = device.summary
    assert summary["requested"] == requested
    line = device_line(summary)
    assert ("software fallback: a GPU adapter was asked for" in line) is fallback, line


def test_this_machine_resolves_auto_as_its_adapters_say_and_the_column_reports_it(tmp_path):
    """The Chromium column here: auto resolves to software exactly when wgpu finds no hardware Vulkan adapter,
    and the report names the adapter and what was asked."""
    expected = "gpu" if chromium.hardware_vulkan_adapter() else "software"
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance/",
            "--webgpu=chromium",
            "-q",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
            "--specs",
            "specs/com.microsoft.Gelu",
            "-k",
            "f32 and X[8] and vec4 and not reject and not WORKGROUP",
            f"--conformance-report={report}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    device = json.loads(report.read_text())["device"]
    assert device["requested"] == expected and "fallback" not in device
    if expected == "software":
        assert "SwiftShader" in device["adapter"]
