"""The WebGPU implementations a device can be opened on, each behind the same object model.

The runtime, timing, guards and device-loss handling are written once against the subset of wgpu-py's object
model they use (adapter ``info``/``limits``/``features``/``request_device_sync``; device ``create_buffer``,
``create_shader_module`` (raising with the compiler's message), ``create_bind_group_layout``,
``create_pipeline_layout``, ``create_compute_pipeline``, ``create_bind_group``, ``create_command_encoder``,
``create_query_set``, ``queue.submit``/``write_buffer``/``read_buffer``; buffer ``map_sync``/``read_mapped``/
``unmap``/``destroy``; errors raised as exceptions carrying the implementation's text, "device lost" on loss).
Each module here offers ``enumerate_adapters()`` in that model:

* ``wgpu``: wgpu-native through wgpu-py (naga compiles WGSL; Firefox's engine);
* ``dawn``: Dawn through ``dawn-python`` (Tint compiles WGSL; Chrome's engine, native);
* ``chromium``: a Chromium page driven by Playwright (Blink's validation, Dawn's wire, Tint's
  robustness transforms: what a web page runs on), local, on a Playwright server or over CDP;
* ``firefox``: a headless Firefox at the suite's served page (Gecko's WebGPU: wgpu and naga behind its IPC);
* ``page:<id>``: a page any browser opened at ``python -m conformance serve``'s URL (``served.PAGES``).

The browser columns share one object model (``page.py``) and one page runtime (``page_runtime.js``).

Modules load on selection (by name, :func:`enumerate_adapters`): each brings its own optional dependency.
"""

from __future__ import annotations

import importlib
import os
import re

from conformance.config import install_hint
from conformance.errors import DeviceError

#: ``--webgpu`` name -> module offering ``enumerate_adapters()``.
IMPLEMENTATIONS = {
    "wgpu": "conformance.gpu.backends.wgpu_native",
    "dawn": "conformance.gpu.backends.dawn",
    "chromium": "conformance.gpu.backends.chromium",
    "firefox": "conformance.gpu.backends.firefox",
}
#: What to install for each, said when it cannot load.
INSTALL = {
    "wgpu": install_hint("wgpu"),
    "dawn": install_hint("pydawn"),
    "chromium": "apt-get install -y chromium && pip install playwright (its own browser download is not used)",
    "firefox": "apt-get install -y firefox-esr",
}
PAGE_PREFIX = "page:"
#: The browser each browser implementation runs (Debian's packages; Playwright's own downloads are never used), or
#: the one named by CONFORMANCE_CHROMIUM / CONFORMANCE_FIREFOX (a headless shell unpacked elsewhere).
EXECUTABLES = {
    "chromium": os.environ.get("CONFORMANCE_CHROMIUM") or "/usr/bin/chromium",
    "firefox": os.environ.get("CONFORMANCE_FIREFOX") or "/usr/bin/firefox-esr",
}


def unavailable(webgpu: str) -> str | None:
    """Why ``webgpu`` cannot run here, found without starting anything (its browser is not installed), or None."""
    exe = EXECUTABLES.get(webgpu)
    if exe and not os.access(exe, os.X_OK):
        return f"{exe} is not installed ({INSTALL[webgpu]})"
    return None


def enumerate_adapters(webgpu: str) -> list:
    """Every adapter the WebGPU implementation ``webgpu`` offers on this machine."""
    if webgpu.startswith(PAGE_PREFIX):
        from_page = importlib.import_module("conformance.gpu.backends.served").enumerate_page_adapters
        try:
            return list(from_page(webgpu[len(PAGE_PREFIX) :]))
        except Exception as exc:  # the page's own errors (it may be gone)
            raise DeviceError(f"cannot reach {webgpu}: {exc}") from None
    if webgpu not in IMPLEMENTATIONS:
        raise DeviceError(f"unknown WebGPU implementation {webgpu!r}; expected one of {', '.join(IMPLEMENTATIONS)}")
    try:
        module = importlib.import_module(IMPLEMENTATIONS[webgpu])
    except ImportError as exc:
        raise DeviceError(f"--webgpu={webgpu} is not installed here ({exc}); {INSTALL[webgpu]}") from None
    try:
        return list(module.enumerate_adapters())
    except Exception as exc:  # each implementation raises its own types when no instance can be made
        raise DeviceError(f"cannot enumerate {webgpu} adapters: {exc}") from None


#: Implementations whose WGSL compiler is naga: it offers the subgroup builtins behind the device's subgroup
#: feature but rejects WGSL's ``enable subgroups;`` directive as not yet implemented (gfx-rs/wgpu#5555), which Tint
#: requires. Templates write the standard directive; it is dropped for these before compiling.
NAGA_IMPLEMENTATIONS = frozenset({"wgpu", "firefox"})
_SUBGROUPS_DIRECTIVE = re.compile(r"^[ \t]*enable[ \t]+subgroups[ \t]*;[ \t]*$", re.MULTILINE)


def for_compiler(webgpu: str, wgsl: str) -> str:
    """``wgsl`` as the implementation's compiler takes it (standard WGSL, less what naga does not implement)."""
    return _SUBGROUPS_DIRECTIVE.sub("", wgsl) if webgpu in NAGA_IMPLEMENTATIONS else wgsl
