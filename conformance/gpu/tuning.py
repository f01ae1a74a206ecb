"""Per-device tuning tables: the best tunables the bench sweep found, used before the manifest defaults.

A table is ``conformance/tuning/<device-key>.json``: a list of entries
``{package, dtype, variant, WORKGROUP_SIZE}``.  A call that names its own
tunables is never overridden; a device without a table gets the defaults.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

TABLES = Path(__file__).resolve().parent / "tuning_tables"


def device_key(summary: dict) -> str:
    text = f"{summary.get('adapter', 'unknown')}-{summary.get('backend', '')}"
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


@lru_cache(maxsize=None)
def _load(key: str) -> tuple[dict, ...]:
    path = TABLES / f"{key}.json"
    if not path.is_file():
        return ()
    try:
        return tuple(json.loads(path.read_text()))
    except (OSError, ValueError):
        return ()


def lookup(summary: dict, package: str, dtype: str, variant: str) -> dict[str, int]:
    for entry in _load(device_key(summary)):
        if (entry.get("package"), entry.get("dtype"), entry.get("variant")) == (package, dtype, variant):
            return {k: v for k, v in entry.items() if k.isupper() and isinstance(v, int)}
    return {}


def write(device, best: list[dict]) -> Path:
    TABLES.mkdir(exist_ok=True)
    path = TABLES / f"{device_key(device.summary)}.json"
    entries = [{k: e[k] for k in ("package", "dtype", "variant", "WORKGROUP_SIZE")} for e in best]
    path.write_text(json.dumps(entries, indent=1) + "\n")
    _load.cache_clear()
    return path
