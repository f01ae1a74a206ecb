"""``--webgpu=all`` takes Firefox where it is installed, and lists it as left out, with why, where it is not."""

from __future__ import annotations

from conformance.gpu import backends
from conformance.plugin.columns import expand


def test_webgpu_all_leaves_out_an_absent_browser_with_why(monkeypatch):
    monkeypatch.setitem(backends.EXECUTABLES, "firefox", "/nonexistent/firefox-esr")
    columns, notes = expand("all", "vulkan", None)
    assert [c.webgpu for c in columns] == ["wgpu", "dawn", "chromium"]
    assert notes == ["firefox: /nonexistent/firefox-esr is not installed (apt-get install -y firefox-esr)"]


def test_webgpu_all_includes_an_installed_firefox(monkeypatch):
    monkeypatch.setitem(backends.EXECUTABLES, "firefox", "/bin/sh")  # installed: an executable is there
    columns, notes = expand("all", "vulkan", None)
    assert [c.webgpu for c in columns] == ["wgpu", "dawn", "chromium", "firefox"] and notes == []
