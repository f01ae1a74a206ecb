"""Where op records are found: the built-in ones, the ``conformance.ops`` entry points, :func:`register`."""

from __future__ import annotations

from importlib import metadata

from conformance.errors import ConformanceError
from conformance.ops import builtin
from conformance.ops.record import OpRecord

ENTRY_POINT_GROUP = "conformance.ops"

_registered: dict[str, OpRecord] = {}
_loaded: dict[str, OpRecord] | None = None
_sources: dict[str, str] = {}    # op -> where its entry-point record came from ("distribution my-ops 0.1.0")

HOW_TO_ADD = (
    "add an op record (conformance.ops.OpRecord: the float64 reference, the tolerance, ...) and register it: "
    "in a distribution, an entry point in the group 'conformance.ops' "
    "(pyproject.toml: [project.entry-points.\"conformance.ops\"] my_op = \"my_pkg.records:RECORD\"), "
    "or at run time conformance.ops.register(record); docs/manual/op-records.md has a complete example")


class RecordNotFound(ConformanceError, LookupError):
    """No op record for an op whose values a case needs; the message says how to add one."""

    def __init__(self, op: str):
        self.op = op
        super().__init__(f"no op record for {op!r} (known: {', '.join(known_ops())}): the values of its accepted "
                         f"calls cannot be checked; {HOW_TO_ADD}")


def _as_records(value, source: str) -> list[OpRecord]:
    if callable(value) and not isinstance(value, OpRecord):
        value = value()
    items = value if isinstance(value, (list, tuple)) else [value]
    bad = [x for x in items if not isinstance(x, OpRecord)]
    if bad:
        raise ConformanceError(f"entry point {source} ({ENTRY_POINT_GROUP}) gave {bad[0]!r}, not an OpRecord "
                               "(or a callable returning OpRecords)")
    return list(items)


def _entry_point_records() -> dict[str, OpRecord]:
    out: dict[str, OpRecord] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            value = ep.load()
        except Exception as exc:  # a broken third-party distribution names itself, and stops nothing else
            raise ConformanceError(f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) cannot be "
                                   f"loaded: {type(exc).__name__}: {exc}") from None
        dist = getattr(ep, "dist", None)
        for record in _as_records(value, f"{ep.name} = {ep.value}"):
            out[record.op] = record
            _sources[record.op] = (f"distribution {dist.name} {dist.version}" if dist is not None
                                   else f"entry point {ep.name} = {ep.value}")
    return out


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


def missing_record_note(op: str) -> str | None:
    """What a command says once, up front, for a package without a record (None when it has one)."""
    if find(op) is not None:
        return None
    return (f"{op_of(op)}: no op record: values will not be checked (each accepted case fails with RecordNotFound) "
            f"and its golden file lacks the cases the record adds: install the distribution that registers "
            f"{op_of(op)} (entry point group {ENTRY_POINT_GROUP!r}), or register it (docs/manual/op-records.md)")


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
