"""Settings read from the environment and the choices shared by every layer (no heavy imports here).

Every ``CONFORMANCE_*`` variable is parsed by :func:`env_float`, so a bad value is one clear error naming the
variable and what it expects, wherever it is read.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Callable

#: The kernel packages this suite ships and certifies by default: in a plain (non-editable) install the copy of
#: the repository's ``specs/`` built into the package (setup.py), in a checkout or an editable install the
#: checkout's ``specs/``. Here, not in the engine, so that a command's ``--help`` loads nothing heavy.
INSTALLED_SPECS = Path(__file__).resolve().parent / "specs"
SOURCE_SPECS = Path(__file__).resolve().parents[1] / "specs"
REPO_SPECS = INSTALLED_SPECS if INSTALLED_SPECS.is_dir() else SOURCE_SPECS
#: The reference JavaScript loader, an npm package of its own (``loader/package.json``), found the same way: a
#: plain install's copy of what npm publishes of it (setup.py), else the checkout's ``loader/``. The suite reaches
#: it one way: this directory and an entry of its package.json (:func:`loader_entry`), never a path into it.
INSTALLED_LOADER = Path(__file__).resolve().parent / "loader"
SOURCE_LOADER = Path(__file__).resolve().parents[1] / "loader"
REPO_LOADER = INSTALLED_LOADER if INSTALLED_LOADER.is_dir() else SOURCE_LOADER
#: The loader's entries, one per audience: ``"."`` a page (getKernel), ``"./plan"`` planning without WebGPU,
#: ``"./jinja"`` what it binds into @huggingface/jinja (the manifest functions, the render budget).
LOADER_ENTRIES = (".", "./plan", "./jinja")


def loader_entry(entry: str = ".", loader: Path | None = None) -> Path:
    """The module file of ``entry`` in the package.json ``exports`` of ``loader`` (default: the reference loader,
    :data:`REPO_LOADER`; another directory laid out the same, such as a test's patched copy)."""
    root = Path(loader or REPO_LOADER)
    try:
        target = json.loads((root / "package.json").read_text(encoding="utf-8"))["exports"][entry]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise FileNotFoundError(f"{root / 'package.json'}: no exports entry {entry!r} ({err})") from None
    if isinstance(target, dict):  # conditions: {"types": ..., "default": ...}
        target = target.get("default")
    if not isinstance(target, str):
        raise FileNotFoundError(f"{root / 'package.json'}: exports entry {entry!r} names no module")
    return (root / target).resolve()


#: The checkout a command was typed in, for a process that runs elsewhere (``certify``'s pytest, in a scratch
#: folder): links below it are refused as below the current directory (``conformance.files.check_no_links``).
CHECKOUT_VARIABLE = "CONFORMANCE_CHECKOUT"

#: ``--device`` values: the WebGPU backend names of wgpu-py, ``auto`` for the best adapter of any backend.
BACKENDS = {"vulkan": "Vulkan", "gl": "OpenGL", "metal": "Metal", "dx12": "D3D12", "auto": None}


def env_float(
    name: str, default: float, error: Callable[[str], Exception], *, allow_inf: bool = False, allow_zero: bool = False
) -> float:
    """The number in the environment variable ``name`` (``default`` when unset or blank); else ``error(message)``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    low_ok = value >= 0 if allow_zero else value > 0
    if not low_ok or (math.isinf(value) and not allow_inf):
        raise error(
            f"{name}={raw!r} must be "
            + ("a number >= 0" if allow_zero else "a positive number")
            + (" (inf: no limit)" if allow_inf else "")
        )
    return value


#: ``--webgpu`` values: the WebGPU implementations a device can be opened on (conformance.gpu.backends).
WEBGPU = ("wgpu", "dawn", "chromium", "firefox")
#: JavaScript runtimes a JavaScript loader runs in (``--impl js-loader --webgpu=node``): Node with Dawn for Node, Deno
#: with wgpu. Only a loader runs there: the suite's own runtime opens its devices through ``WEBGPU``.
JS_RUNTIMES = ("node", "deno")
#: ``--webgpu-adapter``: the adapter a browser the suite launches is to give WebGPU (``auto``: the machine's hardware
#: adapter where it has one, else the browser's software one).
ADAPTER_REQUESTS = ("auto", "gpu", "software")


def default_backend() -> tuple[str, str | None, str]:
    """(backend, adapter filter, WebGPU implementation) used when none is given:
    ``CONFORMANCE_DEVICE`` / ``CONFORMANCE_ADAPTER`` / ``CONFORMANCE_WEBGPU``."""
    return (
        os.environ.get("CONFORMANCE_DEVICE", "auto"),
        os.environ.get("CONFORMANCE_ADAPTER") or None,
        os.environ.get("CONFORMANCE_WEBGPU", "wgpu"),
    )


def user_cache_dir() -> str:
    """Where the suite may write for the user (the tuning tables): ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "webgpu-kernel-conformance")


#: What to install for a Python package a command needs and does not find (``python -m conformance`` says it in
#: one line); the rest come with the suite itself.
INSTALL_HINTS = {
    "wgpu": "pip install 'wgpu==0.32.0'",
    "pydawn": "pip install dawn-python",
    "matplotlib": "pip install 'webgpu-kernel-conformance[bench]'",
    "playwright": "pip install 'webgpu-kernel-conformance[browser]'",
    "onnx": "pip install 'webgpu-kernel-conformance[test]'",
    "onnxruntime": "pip install 'webgpu-kernel-conformance[test]'",
    "torch": "pip install torch",
}


def install_hint(module: str) -> str:
    """The command that installs the top-level ``module``: its own line, else the suite with its dependencies."""
    return INSTALL_HINTS.get(module, "pip install webgpu-kernel-conformance (its dependencies include it)")
