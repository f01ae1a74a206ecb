"""A conformance report read back (``merge``): untrusted, so every field that the matrix, its pages and the
recomputed result read is checked first, and a wrong one is one error naming the file and the JSON pointer
(``/cases/3/status: expected one of passed, failed, ...; got 7``), never a traceback later and never a page drawn
from it.

"Checked" is what the reader needs, not only the JSON type: a number that is formatted or divided by must be
finite as a float (JSON has no bound: a 400-digit integer reads as a Python int that ``format(..., ".3g")``
cannot take), a list that is indexed in step with another has its length, a count is a whole number.

What reads what (keep this list with the readers):

* ``matrix.recomputed`` / ``evidence.assess`` / ``report.summarize``: per case ``id``, ``status``, ``package``,
  ``variant``, ``dtype``, ``expected_variant``, ``evidence``, ``empty``, ``compared``, ``worst_ratio``,
  ``replanned``, ``detail``, ``column``; per column ``interrupted``, ``error``, ``implementation``, ``column``,
  ``user_agent``, ``result`` (shown only, as text); ``columns`` (``matrix.flatten``: a report of several);
* ``matrix.merge`` / ``markdown``: ``packages[].package`` and ``files`` (sha256 per file, compared), ``device``
  (``adapter``, ``backend``, ``driver``, ``webgpu``, ``features``), ``weak[]`` (``package``, ``kind``,
  ``message``: :func:`conformance.certify.evidence.flag_lines` formats all three);
* ``html``: the device's ``type``, ``implementation``, ``provider``, ``browser``, ``onnxruntime-web``,
  ``user_agent`` and ``limits``; per case ``divergence``, ``rerun``, ``repro`` and a value failure's
  ``error_profile`` (:func:`check_error_profile`: ``role``, ``shape``, ``profile``, ``failing``, ``checked``,
  ``mismatches``, ``by_input`` with ``range``, ``worst``, ``failing``, ``count``), which ``failures``
  draws.

Fields nothing reads are left alone; counts a report states about itself (totals, result, the summary's cells,
unchecked, not runnable, compared nothing) are not checked here because they are never used:
:func:`conformance.certify.report.matrix.recomputed` derives them again from the cases (``summary`` must only be an
object: it marks a column's report).
"""

from __future__ import annotations

import math

from conformance.certify.outcomes import STATUSES
from conformance.errors import ConformanceError

TEXT = (str, type(None))
NUMBER = (int, float, type(None))

#: Per case: field -> the types it may have (absent is always allowed, except for the first five).
CASE_FIELDS = {
    "id": (str,),
    "status": (str,),
    "package": (str,),
    "variant": (str,),
    "dtype": (str,),
    "expected_variant": TEXT,
    "evidence": TEXT,
    "empty": (bool, type(None)),
    "worst_ratio": NUMBER,
    "detail": TEXT,
    "replanned": TEXT,
    "column": TEXT,
    "divergence": TEXT,
    "rerun": TEXT,
    "repro": TEXT,
    "profile": (dict, type(None)),
    "checks": (dict, type(None)),
}
REQUIRED_CASE = ("id", "status", "package", "variant", "dtype")
DEVICE_TEXT = (
    "adapter",
    "backend",
    "driver",
    "webgpu",
    "type",
    "implementation",
    "provider",
    "available",
    "browser",
    "onnxruntime-web",
    "user_agent",
)
#: The fields of a weakness flag (cases.weakness), each formatted into its line.
WEAK_FIELDS = ("package", "kind", "message")

#: The most elements an output's shape may claim: the page divides their count by the profile's bars (a float).
MAX_ELEMENTS = 2**63


class _Missing:
    """A required field that is absent, as an error shows it."""

    def __repr__(self) -> str:
        return "nothing (the field is missing)"


MISSING = _Missing()


def _fail(where: str, pointer: str, expected: str, value) -> ConformanceError:
    shown = repr(value)
    return ConformanceError(
        f"{where}: {pointer or '/'}: expected {expected}; got {shown[:80]}" + ("..." if len(shown) > 80 else "")
    )


def _type_name(types: tuple) -> str:
    names = {
        str: "a string",
        int: "a finite number",
        float: "a finite number",
        bool: "true or false",
        dict: "an object",
        list: "a list",
        type(None): "null",
    }
    return " or ".join(dict.fromkeys(names[t] for t in types))


def finite(value) -> bool:
    """A JSON number that can be formatted and computed with as a float (not true/false, which Python counts as
    numbers; not NaN or an infinity; not an integer beyond the float range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def whole(value, high: int | None = None) -> bool:
    """A count: a JSON integer from 0 (to ``high``)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0 and (high is None or value <= high)


def _field(data: dict, key: str, types: tuple, where: str, pointer: str) -> None:
    if key not in data:
        return
    value = data[key]
    wrong = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
    if wrong or (isinstance(value, (int, float)) and not isinstance(value, bool) and not finite(value)):
        raise _fail(where, f"{pointer}/{key}", _type_name(types), value)


def _required_text(data: dict, keys: tuple, where: str, pointer: str) -> None:
    for key in keys:
        if not isinstance(data.get(key, MISSING), str):
            raise _fail(where, f"{pointer}/{key}", "a string", data.get(key, MISSING))


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


def _items(
    data: dict, key: str, ok, expected: str, where: str, pointer: str, *, required: bool = False, empty: bool = True
) -> list | None:
    """``data[key]``: null or absent (None; an error where ``required``), else a list (non-empty unless
    ``empty``) each of whose items passes ``ok``, a wrong one located at its index."""
    value = data.get(key, MISSING)
    if (value is MISSING or value is None) and not required:
        return None
    if not isinstance(value, list) or (not empty and not value):
        raise _fail(
            where,
            f"{pointer}/{key}",
            ("a list" if empty else "a non-empty list") + ("" if required else " or null"),
            value,
        )
    for i, item in enumerate(value):
        if not ok(item):
            raise _fail(where, f"{pointer}/{key}/{i}", expected, item)
    return value


def _bar(value) -> bool:
    """A bar of a plot: err/allowed (negative: unconstrained, drawn blank), or null for a non-finite error."""
    return value is None or finite(value)


def _share(value) -> bool:
    return finite(value) and 0 <= value <= 1


def _shares(data: dict, key: str, bars: list | None, of: str, where: str, pointer: str) -> None:
    """The share out of tolerance under each bar: none, or one per bar (the page indexes them in step)."""
    shares = _items(data, key, _share, "a number from 0 to 1", where, pointer)
    if shares and bars is not None and len(shares) != len(bars):
        raise _fail(
            where, f"{pointer}/{key}", f"a list of {len(bars)} numbers from 0 to 1 (one per {of}) or none", shares
        )


def _count(
    data: dict, key: str, where: str, pointer: str, *, high: int | None = None, high_name: str = ""
) -> int | None:
    value = data.get(key)
    if value is not None and not whole(value, high):
        raise _fail(
            where,
            f"{pointer}/{key}",
            "a whole number >= 0" if high is None else f"a whole number from 0 to {high_name} ({high})",
            value,
        )
    return value


def check_error_profile(profile, where: str, pointer: str) -> None:
    """A value failure's picture, as :meth:`reference.compare.Comparison.error_profile` writes it and
    :mod:`conformance.certify.report.failures` draws it: every number it formats or divides by finite, every list
    it indexes in step with another of that one's length, the shape a shape."""
    if profile is None:
        return
    if not isinstance(profile, dict):
        raise _fail(where, pointer, "an object or null", profile)
    _field(profile, "role", TEXT, where, pointer)
    dims = _items(profile, "shape", lambda d: whole(d, MAX_ELEMENTS), "a whole number from 0 to 2**63", where, pointer)
    if dims and math.prod(dims) > MAX_ELEMENTS:
        raise _fail(where, f"{pointer}/shape", "at most 2**63 elements (an output's shape)", dims)
    bars = _items(profile, "profile", _bar, "a finite number or null", where, pointer)
    _shares(profile, "failing", bars, "bar of profile", where, pointer)
    checked = _count(profile, "checked", where, pointer)
    _count(profile, "mismatches", where, pointer, high=checked, high_name="checked")
    by_input = profile.get("by_input")
    if by_input is not None:
        _check_by_input(by_input, where, f"{pointer}/by_input")


def _check_by_input(data, where: str, pointer: str) -> None:
    """err/allowed against the input: ``range`` [low, high] split into one bin per ``worst`` entry (the page
    divides the range by their number and labels each bin), ``failing`` and ``count`` one per bin where given."""
    if not isinstance(data, dict):
        raise _fail(where, pointer, "an object or null", data)
    span = data.get("range", MISSING)
    if not (
        isinstance(span, list)
        and len(span) == 2
        and all(map(finite, span))
        and span[0] < span[1]
        and math.isfinite(float(span[1]) - float(span[0]))
    ):
        raise _fail(where, f"{pointer}/range", "[low, high], two finite numbers with low < high", span)
    worst = _items(data, "worst", _bar, "a finite number or null", where, pointer, required=True, empty=False)
    _shares(data, "failing", worst, "bin of worst", where, pointer)
    counts = _items(data, "count", whole, "a whole number >= 0", where, pointer)
    if counts and len(counts) != len(worst):
        raise _fail(
            where, f"{pointer}/count", f"a list of {len(worst)} whole numbers (one per bin of worst) or none", counts
        )


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
    if case.get("compared") is not None and not whole(case["compared"]):
        raise _fail(where, f"{pointer}/compared", "a whole number >= 0 or null", case["compared"])
    check_error_profile(case.get("error_profile"), where, f"{pointer}/error_profile")


def _check_device(device, where: str, pointer: str) -> None:
    if device is None:
        return
    if not isinstance(device, dict):
        raise _fail(where, pointer, "an object or null", device)
    for key in DEVICE_TEXT:
        _field(device, key, TEXT, where, pointer)
    _items(device, "features", lambda f: isinstance(f, str), "a string", where, pointer)
    _field(device, "limits", (dict, type(None)), where, pointer)
    for name, value in (device.get("limits") or {}).items():
        if not finite(value):
            raise _fail(where, f"{pointer}/limits/{_escape(name)}", "a finite number", value)


def _escape(key: str) -> str:
    """An object key as a JSON pointer (RFC 6901) token."""
    return key.replace("~", "~0").replace("/", "~1")


def check_column(data: dict, where: str, pointer: str = "") -> None:
    """The fields of one column's report (a report, or one of ``columns``) that merge reads."""
    for key in ("implementation", "column", "error", "user_agent"):
        _field(data, key, TEXT, where, pointer)
    _field(data, "interrupted", (bool, type(None)), where, pointer)
    if not isinstance(data.get("summary", MISSING), dict):  # the mark of a column's report (matrix.load)
        raise _fail(where, f"{pointer}/summary", "an object", data.get("summary", MISSING))
    _check_device(data.get("device"), where, f"{pointer}/device")
    if not isinstance(data.get("packages", MISSING), list):
        raise _fail(where, f"{pointer}/packages", "a list of packages", data.get("packages", MISSING))
    for i, package in enumerate(_list_of_objects(data, "packages", where, pointer)):
        _field(package, "package", (str,), where, f"{pointer}/packages/{i}")
        if "package" not in package:
            raise ConformanceError(f"{where}: {pointer}/packages/{i}: a package without 'package'")
        _field(package, "files", (dict, type(None)), where, f"{pointer}/packages/{i}")
        for name, digest in (package.get("files") or {}).items():
            if not isinstance(digest, str):
                raise _fail(where, f"{pointer}/packages/{i}/files/{_escape(name)}", "a string (a sha256)", digest)
    for i, item in enumerate(_list_of_objects(data, "weak", where, pointer)):
        _required_text(item, WEAK_FIELDS, where, f"{pointer}/weak/{i}")
    for i, item in enumerate(_list_of_objects(data, "compared_nothing", where, pointer)):
        for name in ("package", "id", "why", "column"):
            _field(item, name, TEXT, where, f"{pointer}/compared_nothing/{i}")
    for i, item in enumerate(_list_of_objects(data, "left_out", where, pointer)):  # heavy cases not run
        _required_text(item, ("id", "package", "dtype"), where, f"{pointer}/left_out/{i}")
        for name in ("expected_variant", "column"):
            _field(item, name, TEXT, where, f"{pointer}/left_out/{i}")
        _field(item, "empty", (bool, type(None)), where, f"{pointer}/left_out/{i}")
    cases = data.get("cases")
    if not isinstance(cases, list):
        raise _fail(where, f"{pointer}/cases", "a list of cases", cases)
    for i, case in enumerate(cases):
        check_case(case, where, f"{pointer}/cases/{i}")


def check_report(data: dict, where: str) -> None:
    """Every column of ``data`` (a report, or a report of several with ``columns``), or a located error. Where
    ``columns`` is present at all, the columns are what ``matrix.flatten`` takes, so they must be column reports:
    an empty list or a list of anything else would leave the report's own fields unchecked, or its columns."""
    if "columns" not in data:
        check_column(data, where)
        return
    columns = data["columns"]
    if not isinstance(columns, list) or not columns:
        raise _fail(where, "/columns", "a non-empty list of column reports (a run of several columns)", columns)
    for i, col in enumerate(columns):
        if not isinstance(col, dict):
            raise _fail(where, f"/columns/{i}", "an object (a column's report)", col)
        check_column(col, where, f"/columns/{i}")
