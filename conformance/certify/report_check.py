"""A conformance report read back (``merge``): untrusted, so every field that the matrix, its pages and the
recomputed result read is checked for its type first, and a wrong one is one error naming the file and the JSON
pointer (``/cases/3/status: expected one of passed, failed, ...; got 7``), never a traceback later.

Fields nothing reads are left alone; counts a report states about itself (totals, result, summary) are not
checked here because they are never used: :func:`conformance.certify.matrix.recomputed` derives them again from
the cases.
"""

from __future__ import annotations

from conformance.certify.outcomes import STATUSES
from conformance.errors import ConformanceError

TEXT = (str, type(None))
NUMBER = (int, float, type(None))

#: Per case: field -> the types it may have (absent is always allowed, except for the first five).
CASE_FIELDS = {"id": (str,), "status": (str,), "package": (str,), "variant": (str,), "dtype": (str,),
               "expected_variant": TEXT, "evidence": TEXT, "empty": (bool, type(None)), "compared": NUMBER,
               "worst_ratio": NUMBER, "detail": TEXT, "replanned": TEXT, "column": TEXT, "divergence": TEXT,
               "rerun": TEXT, "repro": TEXT, "profile": (dict, type(None)), "checks": (dict, type(None))}
REQUIRED_CASE = ("id", "status", "package", "variant", "dtype")
DEVICE_TEXT = ("adapter", "backend", "driver", "webgpu", "type", "implementation", "provider", "available")


def _fail(where: str, pointer: str, expected: str, value) -> ConformanceError:
    shown = repr(value)
    return ConformanceError(f"{where}: {pointer or '/'}: expected {expected}; got {shown[:80]}"
                            + ("..." if len(shown) > 80 else ""))


def _type_name(types: tuple) -> str:
    names = {str: "a string", int: "a number", float: "a number", bool: "true or false", dict: "an object",
             list: "a list", type(None): "null"}
    return " or ".join(dict.fromkeys(names[t] for t in types))


def _field(data: dict, key: str, types: tuple, where: str, pointer: str) -> None:
    if key in data and (not isinstance(data[key], types) or (isinstance(data[key], bool) and bool not in types)):
        raise _fail(where, f"{pointer}/{key}", _type_name(types), data[key])


def _list_of_objects(data: dict, key: str, where: str, pointer: str) -> list:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(where, f"{pointer}/{key}", "a list", value)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _fail(where, f"{pointer}/{key}/{i}", "an object", item)
    return value


def check_case(case, where: str, pointer: str) -> None:
    if not isinstance(case, dict):
        raise _fail(where, pointer, "an object (a case)", case)
    for key in REQUIRED_CASE:
        if key not in case:
            raise ConformanceError(f"{where}: {pointer}: a case without {key!r}")
    for key, types in CASE_FIELDS.items():
        _field(case, key, types, where, pointer)
    if case["status"] not in STATUSES:
        raise _fail(where, f"{pointer}/status", f"one of {', '.join(STATUSES)}", case["status"])


def check_column(data: dict, where: str, pointer: str = "") -> None:
    """The fields of one column's report (a report, or one of ``columns``) that merge reads."""
    for key in ("implementation", "column", "error", "user_agent"):
        _field(data, key, TEXT, where, pointer)
    _field(data, "interrupted", (bool, type(None)), where, pointer)
    _field(data, "summary", (dict,), where, pointer)
    device = data.get("device")
    if device is not None:
        if not isinstance(device, dict):
            raise _fail(where, f"{pointer}/device", "an object or null", device)
        for key in DEVICE_TEXT:
            _field(device, key, TEXT, where, f"{pointer}/device")
        _field(device, "features", (list, type(None)), where, f"{pointer}/device")
        _field(device, "limits", (dict, type(None)), where, f"{pointer}/device")
    for i, package in enumerate(_list_of_objects(data, "packages", where, pointer)):
        _field(package, "package", (str,), where, f"{pointer}/packages/{i}")
        if "package" not in package:
            raise ConformanceError(f"{where}: {pointer}/packages/{i}: a package without 'package'")
    for key in ("weak", "compared_nothing"):
        for i, item in enumerate(_list_of_objects(data, key, where, pointer)):
            for name in ("package", "kind", "message", "id", "why", "column"):
                _field(item, name, TEXT, where, f"{pointer}/{key}/{i}")
    cases = data.get("cases")
    if not isinstance(cases, list):
        raise _fail(where, f"{pointer}/cases", "a list of cases", cases)
    for i, case in enumerate(cases):
        check_case(case, where, f"{pointer}/cases/{i}")


def check_report(data: dict, where: str) -> None:
    """Every column of ``data`` (a report, or a report of several with ``columns``), or a located error."""
    if isinstance(data.get("columns"), list):
        for i, col in enumerate(data["columns"]):
            check_column(col, where, f"/columns/{i}")
    else:
        check_column(data, where)
