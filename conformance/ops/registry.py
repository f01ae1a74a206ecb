"""Where op records are found: the built-in ones, the ``conformance.ops`` entry points, :func:`register`."""

from __future__ import annotations

import hashlib
import inspect
import os
from importlib import metadata
from pathlib import Path

from conformance.errors import ConformanceError
from conformance.ops import builtin
from conformance.ops.record import OpRecord

ENTRY_POINT_GROUP = "conformance.ops"

_registered: dict[str, OpRecord] = {}
_loaded: dict[str, OpRecord] | None = None
_sources: dict[str, str] = {}  # op -> where its entry-point record came from ("distribution my-ops 0.1.0")

HOW_TO_ADD = (
    "add an op record (conformance.ops.OpRecord: the float64 reference, the tolerance, ...) and register it: "
    "in a distribution, an entry point in the group 'conformance.ops' "
    '(pyproject.toml: [project.entry-points."conformance.ops"] my_op = "my_pkg.records:RECORD"), '
    "or at run time conformance.ops.register(record); docs/manual/op-records.md has a complete example"
)


class RecordNotFound(ConformanceError, LookupError):
    """No op record for an op whose values a case needs; the message says how to add one."""

    def __init__(self, op: str):
        self.op = op
        super().__init__(
            f"no op record for {op!r} (known: {', '.join(known_ops())}): the values of its accepted "
            f"calls cannot be checked; {HOW_TO_ADD}"
        )


def _as_records(value, source: str) -> list[OpRecord]:
    if callable(value) and not isinstance(value, OpRecord):
        value = value()
    items = value if isinstance(value, (list, tuple)) else [value]
    bad = [x for x in items if not isinstance(x, OpRecord)]
    if bad:
        raise ConformanceError(
            f"entry point {source} ({ENTRY_POINT_GROUP}) gave {bad[0]!r}, not an OpRecord "
            "(or a callable returning OpRecords)"
        )
    return list(items)


def _entry_point_records() -> dict[str, OpRecord]:
    out: dict[str, OpRecord] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            value = ep.load()
        except Exception as exc:  # a broken third-party distribution names itself, and stops nothing else
            raise ConformanceError(
                f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) cannot be "
                f"loaded: {type(exc).__name__}: {exc}"
            ) from None
        dist = getattr(ep, "dist", None)
        source = (
            f"distribution {dist.name} {dist.version}" if dist is not None else f"entry point {ep.name} = {ep.value}"
        )
        for record in _as_records(value, f"{ep.name} = {ep.value}"):
            _refuse_replacement(record.op, f"{source} (entry point {ep.name} = {ep.value})", out)
            out[record.op] = record
            _sources[record.op] = source
    return out


def _refuse_replacement(op: str, source: str, found: dict[str, OpRecord]) -> None:
    """An outside record never replaces another: not a built-in one (a pull request's ``records/`` installed in
    CI would otherwise swap a shipped op's reference for its own), nor one of another entry point."""
    if op in {r.op for r in builtin.RECORDS}:
        raise ConformanceError(
            f"{source} registers an op record for {op}, which the suite's built-in record "
            f"(conformance.ops.builtin) defines: an outside record never replaces a built-in "
            f"one; uninstall that distribution, or give its op a domain of its own"
        )
    if op in found:
        raise ConformanceError(
            f"{source} and {_sources[op]} both register an op record for {op}: which one "
            f"checks the values would depend on install order; uninstall one of them"
        )


def _all() -> dict[str, OpRecord]:
    global _loaded
    if _loaded is None:
        _loaded = {r.op: r for r in builtin.RECORDS}
        _loaded.update(_entry_point_records())
    return {**_loaded, **_registered}


def reload() -> None:
    """Read the entry points again (after installing a distribution in this process)."""
    global _loaded
    _loaded = None


def register(record: OpRecord) -> OpRecord:
    """Register ``record`` in this process (over a built-in or entry-point record of the same op)."""
    if not isinstance(record, OpRecord):
        raise TypeError(f"register() takes an OpRecord, got {type(record).__name__}")
    _registered[record.op] = record
    return record


def unregister(op: str) -> None:
    _registered.pop(op, None)


def source_of(op: str) -> str:
    """Where the record of ``op`` comes from: registered at run time, a distribution (name and version), built in."""
    op = op_of(op)
    if op in _registered:
        return "registered at run time"
    _all()
    return _sources.get(op, "built in (conformance.ops.builtin)")


def code_digest(op: str) -> str | None:
    """For an outside record: sha256 (12 hex digits) of the source files of the modules that define its functions
    (reference, tolerance, data draws...), so that a changed reference shows where the golden files name the
    record (``cases.golden.record_line``) and in the gate's diff; None for a built-in record, or without one."""
    record = find(op)
    if record is None or source_of(op).startswith("built in"):
        return None
    functions = [
        record.compute,
        record.tolerance,
        record.special_values,
        record.torch_peer,
        record.bench_inputs,
        record.interpret,
        record.tolerance_parameters,
        record.output_dtype,
        *(r.draw for r in record.data),
    ]
    files = set()
    for fn in functions:
        try:
            files.add(inspect.getsourcefile(fn) if fn is not None else None)
        except TypeError:  # a C function: no source of its own
            continue
    h = hashlib.sha256()
    for name in sorted(f for f in files if f):
        try:
            h.update(os.path.basename(name).encode() + b"\0" + Path(name).read_bytes() + b"\0")
        except OSError:
            h.update(os.path.basename(name).encode() + b"\0unreadable\0")
    return h.hexdigest()[:12]


def missing_record_note(op: str) -> str | None:
    """What a command says once, up front, for a package without a record (None when it has one)."""
    if find(op) is not None:
        return None
    return (
        f"{op_of(op)}: no op record: values will not be checked (each accepted case fails with RecordNotFound) "
        f"and its golden file lacks the cases the record adds: install the distribution that registers "
        f"{op_of(op)} (entry point group {ENTRY_POINT_GROUP!r}), or register it (docs/manual/op-records.md)"
    )


def known_ops() -> list[str]:
    return sorted(_all())


def op_of(package_id: str) -> str:
    """The op id of a package id: every version (``<op id>@N``) of a package implements the same op."""
    return package_id.split("@", 1)[0]


def record_for(op: str) -> OpRecord:
    """The record of ``op`` (``"<domain>.<name>"``, the manifest's op id, or a package id ``<op id>@N``);
    :class:`RecordNotFound` if none."""
    record = _all().get(op_of(op))
    if record is None:
        raise RecordNotFound(op)
    return record


def find(op: str) -> OpRecord | None:
    """The record of ``op`` or None (for what works without one: rejections, empty outputs, the pool)."""
    return _all().get(op_of(op))
