"""What to say when a browser offers no WebGPU: that it is the browser (not the kernel, not the suite), and how to
turn WebGPU on in that browser. Used by the served page's column (``serve``) and by the web repros."""

from __future__ import annotations

import re

#: Substrings of a page's error that mean the browser has no WebGPU to offer (no ``navigator.gpu``, or an adapter
#: request answered null), as page_runtime.js and the browsers word them.
NO_WEBGPU = (
    "requestAdapter() returned null",
    "navigator.gpu is undefined",
    "reading 'requestAdapter'",
    "navigator.gpu: undefined",
    "no available backend found",
)

#: Browser (as the user agent names it) -> how to turn WebGPU on there.
HOW = {
    "Chrome": "Chrome / Chromium: start it with --enable-unsafe-webgpu (on Linux also --enable-features=Vulkan), "
    "or set chrome://flags/#enable-unsafe-webgpu to Enabled and relaunch",
    "Edge": "Edge: start it with --enable-unsafe-webgpu, or set edge://flags/#enable-unsafe-webgpu to Enabled "
    "and relaunch",
    "Firefox": "Firefox: in about:config set dom.webgpu.enabled to true (ESR and Linux builds also need "
    "gfx.webgpu.ignore-blocklist true for a software or blocklisted adapter) and reload",
    "Safari": "Safari: Develop > Feature Flags > WebGPU on (Safari 18+), then reload",
}
PAGE_NOTE = "a page needs a secure context for WebGPU: open the URL as http://127.0.0.1 or localhost, or over https"


def is_no_webgpu(error: str | None) -> bool:
    """Whether ``error`` (a page's or a repro's) says the browser has no WebGPU, rather than a failure."""
    return bool(error) and any(s in error for s in NO_WEBGPU)


def browser_of(user_agent: str | None) -> str | None:
    """ "Chrome", "Edge", "Firefox" or "Safari" from a user agent (None when it names none of them)."""
    for name, pattern in (
        ("Firefox", r"Firefox/"),
        ("Edge", r"Edg/"),
        ("Chrome", r"Chrome/|Chromium/"),
        ("Safari", r"Version/[\d.]+.*Safari"),
    ):
        if re.search(pattern, user_agent or ""):
            return name
    return None


def how_to_enable(user_agent: str | None = None) -> str:
    """How to turn WebGPU on in the browser of ``user_agent`` (every known browser's way when it is unknown)."""
    name = browser_of(user_agent)
    ways = [HOW[name]] if name else list(HOW.values())
    return "; ".join(ways) + f" ({PAGE_NOTE})"


def no_webgpu_message(error: str, user_agent: str | None = None) -> str:
    """The one line for a browser without WebGPU: what it said, that this is the browser, and how to turn it on."""
    return (
        f"this browser offers no WebGPU ({' '.join(error.split())[:300]}): nothing was run, the kernels are "
        f"not at fault; to turn WebGPU on: {how_to_enable(user_agent)}"
    )
