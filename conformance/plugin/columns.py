"""The columns of a run: each (WebGPU implementation, backend, adapter) the cases are certified on.

``--device=all`` takes every adapter the chosen implementation offers, ``--webgpu=all`` every implementation;
one column is the usual run (its case ids carry no suffix). A column whose device cannot be opened or cannot run
a compute shader is one clear error for that column, not a failure per case.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.config import BACKENDS, WEBGPU
from conformance.errors import DeviceError
from conformance.gpu.backends import unavailable
from conformance.gpu.device import adapters_of, devices, probe_compute

#: Adapter backend names (as reported) to --device names.
DEVICE_OF = {name: key for key, name in BACKENDS.items() if name}


@dataclass(frozen=True)
class Column:
    webgpu: str
    backend: str  # a --device name
    adapter: str | None = None  # an adapter filter, None: the best adapter of the backend

    @property
    def slug(self) -> str:
        """The column's part of a case id and marker (``dawn-vulkan-llvmpipe``)."""
        name = (self.adapter or "").split(" (")[0].split()[0] if self.adapter else ""
        return "-".join(p for p in (self.webgpu, self.backend, name.lower()) if p)


def expand(webgpu: str, backend: str, adapter: str | None) -> tuple[list[Column], list[str]]:
    """(the columns of ``--webgpu``/``--device``/``--adapter``, why implementations or adapters were left out)."""
    implementations, notes = [webgpu], []
    if webgpu == "all":  # every implementation that can run here; the others are left out, with why
        implementations = [w for w in WEBGPU if not unavailable(w)]
        notes = [f"{w}: {unavailable(w)}" for w in WEBGPU if unavailable(w)]
    if backend != "all":
        return [Column(w, backend, adapter) for w in implementations], notes
    columns = []
    for w in implementations:
        try:
            found = adapters_of(w, "auto", adapter)
        except DeviceError as err:
            notes.append(f"{w}: {err}")
            continue
        for a in found:
            reported = (a.info.get("backend_type") or "").rsplit("/", 1)[-1]
            if reported not in DEVICE_OF:
                notes.append(f"{w}: {a.info.get('device')} on {reported} left out (not a --device backend)")
            elif getattr(a, "feature_level", "core") != "core":
                notes.append(f"{w}: {a.info.get('device')} on {reported} left out (WebGPU compatibility mode only)")
            else:
                column = Column(w, DEVICE_OF[reported], a.info.get("device"))
                if column not in columns:
                    columns.append(column)
    return columns, notes


def column_error(column: Column) -> str | None:
    """Why this column's device cannot certify anything (no device, no compute), or None."""
    try:
        return probe_compute(devices.get(column.backend, column.adapter, column.webgpu))
    except DeviceError as err:
        return str(err)
