"""Op records: everything the suite knows about one op, in one place (like PyTorch's OpInfo).

A record (:class:`OpRecord`) holds the float64 reference and its tolerance model (``reference/`` holds the math),
how non-finite inputs spread (``unconstrained``: per element or whole rows), the per-op input data the case
generator draws (``data``), the ONNX Runtime mapping (:class:`OrtMapping`), the PyTorch bench peer, the bench
inputs for every required role and the words failure messages use. The generic code (``cases/``,
``conformance/certify``, ``conformance/tools``) asks the record and keeps no op knowledge of its own.

Layering: this package sits between the engine and the case generator (``tests/layout/test_imports.py``): it
imports ``reference`` and the foundation only, so that ``cases``, ``certify`` and ``tools`` all can read it.

Records come from :mod:`conformance.ops.builtin` (the five packages under ``specs/``), from the entry point group
``conformance.ops`` (each entry point names an :class:`OpRecord` or a callable returning one or a list of them)
and from :func:`register` (a test, a notebook). A lookup for an op without a record raises
:class:`RecordNotFound`, which says how to add one.
"""

from __future__ import annotations

from conformance.ops.record import DataRecipe, OpRecord, OrtMapping, PlanContext
from conformance.ops.registry import (
    ENTRY_POINT_GROUP,
    RecordNotFound,
    known_ops,
    missing_record_note,
    record_for,
    register,
    source_of,
    unregister,
)

__all__ = [
    "DataRecipe",
    "ENTRY_POINT_GROUP",
    "OpRecord",
    "OrtMapping",
    "PlanContext",
    "RecordNotFound",
    "known_ops",
    "missing_record_note",
    "record_for",
    "register",
    "source_of",
    "unregister",
]
