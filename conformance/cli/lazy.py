"""Names a command uses, imported when it runs: registering every command (``--help``) loads nothing heavy.

``get_device = on_use("conformance.gpu.device", "get_device")`` stands for the function until the first call
imports its module; ``bench = on_use("conformance.tools.bench")`` for a module until the first attribute read.
``tests/layout/test_imports.py`` reads these lines as the imports they are, so the layering still holds them.
A module that is not installed surfaces as ``ModuleNotFoundError`` when the command runs, which
``python -m conformance`` turns into one line saying what to install.
"""

from __future__ import annotations

import importlib


class Deferred:
    """Stands for ``module`` (or its attribute ``name``) and imports it at the first call or attribute read."""

    __slots__ = ("_module", "_name")

    def __init__(self, module: str, name: str | None = None):
        self._module, self._name = module, name

    def _target(self):
        module = importlib.import_module(self._module)
        return getattr(module, self._name) if self._name else module

    def __getattr__(self, attribute: str):
        return getattr(self._target(), attribute)

    def __call__(self, *args, **kwargs):
        return self._target()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"on_use({self._module!r}{f', {self._name!r}' if self._name else ''})"


def on_use(module: str, name: str | None = None) -> Deferred:
    """``import module`` (or ``from module import name``), made when the command first uses it."""
    return Deferred(module, name)
