"""webgpu-kernel-conformance: plan, run and certify declaratively specified WebGPU kernels.

The public names load on first use (PEP 562), so importing a part of the suite (the pytest plugin, say) does not
pull in the engine, NumPy or a WebGPU implementation.
"""

from __future__ import annotations

import importlib

#: The suite's version: the one place it is written (pyproject.toml reads it; releases are tagged v<version>).
__version__ = "0.1.0"

_PUBLIC = {
    "load_kernel": "conformance.gpu.kernel",
    "Kernel": "conformance.gpu.kernel",
    "DeviceProfile": "conformance.engine.profile",
    "BASELINE": "conformance.engine.profile",
    **{
        name: "conformance.errors"
        for name in (
            "ContractError",
            "NoVariantError",
            "ManifestError",
            "ExpressionError",
            "TemplateError",
            "KernelRuntimeError",
            "DeviceError",
            "ConformanceError",
        )
    },
}
__all__ = list(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
