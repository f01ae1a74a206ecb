"""Drive the reference loader's public API (``getKernel``, ``kernel.plan``, ``kernel.render``) in Node on packages
laid out as published, with no GPU: ``call_loader(tmp_path, packages, calls)`` -> label -> outcome."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.config import loader_entry
from conformance.engine.package import Package
from conformance.engine.profile import BASELINE
from conformance.impls.js_loader.published import published_files

INDEX = loader_entry(".")
HERE = Path(__file__).resolve().parent
#: A heap far below Node's default, so that a render that builds without bound dies in seconds, not after
#: taking the machine's memory: what the budget must prevent then fails the test fast.
HEAP_MB = 256


def call_loader(
    tmp_path: Path, packages: dict[str, Package], calls: dict[str, dict], timeout: float = 120, index: Path = INDEX
) -> dict:
    """Each call ``{"package": name, "method": "plan" | "render", "inputs": {role: {"shape", "dtype"}},
    "options": {...}}`` made through the loader in one Node process; label -> ``{"ok": True, "value": ...}`` (the
    variant planned, or each pass's rendered length) or the error's ``{name, reason, argument, message, file}``;
    ``index``: another loader's module (a patched copy's ``loader_entry(".", copy)``)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("the loader tests need Node")
    request = {
        "limits": dict(BASELINE.limits),
        "features": sorted(BASELINE.features),
        "calls": calls,
        "packages": {
            name: {
                str(v): {n: base64.b64encode(data).decode() for n, data in files.items()}
                for v, files in published_files(p).items()
            }
            for name, p in packages.items()
        },
    }
    path = tmp_path / "loader-request.json"
    path.write_text(json.dumps(request))
    done = subprocess.run(
        [node, f"--max-old-space-size={HEAP_MB}", str(HERE / "driver.mjs"), index.resolve().as_uri(), str(path)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"Node exited {done.returncode}: {done.stderr[-3000:]}"
    return json.loads(done.stdout)
