"""Per-device tuning tables: the best tunables the bench sweep found, used before the manifest defaults.

A table is ``<device-key>.json``: a list of entries ``{package, version, dtype, variant,
WORKGROUP_SIZE}`` (``package`` the op id; ``version`` the manifest's, 1 when absent, so that
``com.microsoft.Gelu`` and ``com.microsoft.Gelu@2`` rows never share a key).  Tables are looked up in the user's cache
(``$XDG_CACHE_HOME/webgpu-kernel-conformance/tuning``, where ``bench
--write-tuning`` writes them), then among those shipped with the suite
(``conformance/gpu/tuning_tables``, read-only).  A call that names its own
tunables is never overridden; a device without a table gets the defaults.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from conformance.config import user_cache_dir

SHIPPED = Path(__file__).resolve().parent / "tuning_tables"


def user_tables() -> Path:
    """Where ``bench --write-tuning`` writes by default: never into the installed package."""
    return Path(user_cache_dir()) / "tuning"


def device_key(summary: dict) -> str:
    text = f"{summary.get('adapter', 'unknown')}-{summary.get('backend', '')}"
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


@lru_cache(maxsize=None)
def _load(key: str, user: Path) -> tuple[dict, ...]:
    for directory in (user, SHIPPED):
        path = directory / f"{key}.json"
        if path.is_file():
            try:
                return tuple(json.loads(path.read_text()))
            except (OSError, ValueError):
                return ()
    return ()


def entry_key(entry: dict) -> tuple:
    """What a table entry is for: (op id, package version, dtype, variant); tables without versions are version 1."""
    return entry.get("package"), entry.get("version", 1), entry.get("dtype"), entry.get("variant")


def lookup(summary: dict, package: str, version: int, dtype: str, variant: str) -> dict[str, int]:
    for entry in _load(device_key(summary), user_tables()):
        if entry_key(entry) == (package, version, dtype, variant):
            return {k: v for k, v in entry.items() if k.isupper() and isinstance(v, int)}
    return {}


def write(device, best: list[dict], directory: Path | None = None) -> Path:
    """Store ``best`` as the device's table in ``directory`` (default: :func:`user_tables`)."""
    directory = Path(directory) if directory is not None else user_tables()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{device_key(device.summary)}.json"
    entries = [
        {
            k: e.get(k, 1) if k == "version" else e[k]
            for k in ("package", "version", "dtype", "variant", "WORKGROUP_SIZE")
        }
        for e in best
    ]
    keys = [entry_key(e) for e in entries]
    if len(set(keys)) != len(keys):
        raise ValueError(f"tuning entries share a key (package, version, dtype, variant): {sorted(keys)}")
    path.write_text(json.dumps(entries, indent=1) + "\n")
    _load.cache_clear()
    return path
