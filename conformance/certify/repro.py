"""Standalone reproductions of an outside implementation's failures (``--repro-dir DIR``), grouped and indexed.

A failing case of an implementation outside this suite (a divergence, or outputs that break the contract) becomes
a :class:`Failure`: the call, what the contract expects and what the implementation did, in plain NumPy and
strings. An implementation that defines ``repro_files(self, failure) -> dict[str, bytes]`` turns one into files
that reproduce it with the implementation alone (relative name -> bytes; the first entry is the one to run; it
may raise :class:`~conformance.certify.implementations.NotSupported` with why not). Identical failures (same op,
implementation, provider, kind and :func:`signature`) form one group, reproduced once, by its smallest case:

* each process keeps, per group, its members and its smallest case's files (:class:`ReproCollector`), and at
  its end writes those files under ``DIR/.candidates/`` (every xdist worker writes its own);
* the process that writes the report (:func:`conformance.certify.repro_index.finalize`) moves each group's smallest candidate to ``DIR/<group>/``
  and writes ``DIR/index.json`` and ``DIR/index.md``: the groups, their member case ids and counts, and for a
  group without a repro, why.

Every name written is checked (:func:`check_files`, :func:`~conformance.certify.repro_index.safe_name`), every
path stays inside DIR, and files are replaced
atomically (:func:`conformance.files.write_output`).

``Failure.expected`` for an accepted call also holds ``"bounds"``: role -> ``{"dtype", "shape", "atol" (a number
or an array of the output's shape), "rtol"}``, the tolerance as numbers, which ``"tolerance"`` states in words.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from conformance.certify.implementations import NotSupported
from conformance.certify.repro_index import CANDIDATES, digest, safe_name, write_inside
from conformance.errors import ConformanceError
from reference.compare import tolerance_text

KINDS = ("accepts-rejected", "rejects-accepted", "values")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: A value as the planner's explanations show it (``ranks.B = 4``, ``shapes.X = [4, 3]``, ``dtypes.T = "f16"``).
_VALUE = re.compile(r' = ("[^"]*"|\[[^\]]*\]|[^,;]+)')
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d+(\.\d+)?([eE][-+]?\d+)?")


@dataclass(frozen=True, eq=False)
class Failure:
    """One failing case of an outside implementation, with all a standalone reproduction needs.

    ``expected``: ``{"outcome": "rejected", "reason"}`` or ``{"outcome": "accepted", "outputs": {role: float64
    array}, "tolerance": text, "bounds": ...}``; ``observed``: ``{"outcome": "rejected", "message"}`` or
    ``{"outcome": "accepted", "outputs": {role: array}}``.
    """

    kind: str                 # one of KINDS
    verdict: str              # one line
    case_id: str
    package: str              # the case's package id (its op id, or <op id>@N)
    inputs: dict              # role -> np.ndarray | None
    attributes: dict
    expected: dict
    observed: dict

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Failure.kind {self.kind!r}: expected one of {', '.join(KINDS)}")


def failure_size(failure: Failure) -> tuple[int, int]:
    """How large the call is, the smallest of a group being its repro: (1 if an input is empty else 0, elements
    over its inputs): a call with values shows a report's reader more than one with an empty tensor."""
    present = [a for a in failure.inputs.values() if a is not None]
    return int(any(a.size == 0 for a in present)), sum(int(a.size) for a in present)


def _op(package: str) -> str:
    return package.split("@", 1)[0]


def signature(failure: Failure) -> str:
    """What makes two failures of the same op, implementation and kind the same report: for a call accepted
    against the contract, the manifest's failing predicate without its values (``biasOk is false: ranks.bias``);
    for a call refused, the implementation's message with its numbers as N; for outputs, the input dtypes and
    what broke, numbers as N."""
    if failure.kind == "accepts-rejected":
        reason = str(failure.expected.get("reason") or "")
        if reason.startswith("no-variant: "):
            reason = reason.split(": ", 2)[-1]   # less the first variant's id: each package version names its own
            return _VALUE.sub("", reason).strip()
        return _NUMBER.sub("N", reason).strip()
    if failure.kind == "rejects-accepted":
        return _NUMBER.sub("N", str(failure.observed.get("message") or "")).strip()
    dtypes = ",".join(sorted({a.dtype.name for a in failure.inputs.values() if a is not None}))
    return f"{dtypes}: " + _NUMBER.sub("N", failure.verdict.split(":")[0]).strip()


def group_key(failure: Failure, impl) -> dict:
    found = signature(failure)
    if found.startswith(f"{impl.name}: "):   # an implementation's messages that start with its name
        found = found[len(impl.name) + 2:]
    return {"implementation": impl.name, "provider": getattr(impl, "provider", None), "op": _op(failure.package),
            "kind": failure.kind, "signature": found}


def group_slug(key: dict) -> str:
    """A directory name for a group: readable (op, kind, a word of the signature) and unique (a hash of the key)."""
    text = key["signature"]
    if key["kind"] == "rejects-accepted":   # the implementation's own words come last
        text = text.rsplit(": ", 1)[-1]
    word = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:40].strip("-")
    op = key["op"].split(".")[-1]
    return safe_name(f"{op}.{key['kind']}.{word or 'x'}.{digest(json.dumps(key, sort_keys=True), 10)}"[:100])


def check_files(files, who: str) -> dict[str, bytes]:
    """``repro_files``' answer, refused unless a non-empty dict of relative names (each component a
    :func:`safe_name`, at most two deep) to bytes."""
    if not isinstance(files, dict) or not files:
        raise ConformanceError(f"{who}.repro_files returned {type(files).__name__}, not a dict of file name -> bytes")
    for name, data in files.items():
        parts = name.split("/") if isinstance(name, str) else []
        if not parts or len(parts) > 2 or not all(_NAME.fullmatch(p) for p in parts):
            raise ConformanceError(f"{who}.repro_files: file name {name!r} is not a relative name of letters, digits, "
                                   f"'.', '_' and '-' (at most one folder deep)")
        if not isinstance(data, (bytes, bytearray)):
            raise ConformanceError(f"{who}.repro_files: {name}: {type(data).__name__}, not bytes")
    return {name: bytes(data) for name, data in files.items()}


@dataclass
class _Group:
    key: dict
    slug: str
    members: list = field(default_factory=list)
    best: tuple | None = None          # (size as a list, case id, verdict, files)
    first: str | None = None           # the file to run
    note: str | None = None            # why this group has no repro


class ReproCollector:
    """Per process: the failures of one run, grouped; the smallest case's files of each group, in memory."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.groups: dict[str, _Group] = {}
        self.seconds = 0.0               # time spent on repros (shown, never used to decide anything)

    def add(self, impl, failure: Failure) -> str | None:
        """Record ``failure`` of ``impl``; the path of its group's repro (None when it has none)."""
        start = time.perf_counter()
        try:
            return self._add(impl, failure)
        finally:
            self.seconds += time.perf_counter() - start

    def _add(self, impl, failure: Failure) -> str | None:
        key = group_key(failure, impl)
        slug = group_slug(key)
        group = self.groups.setdefault(slug, _Group(key, slug))
        group.members.append(failure.case_id)
        size = failure_size(failure)
        if group.best is None or (list(size), failure.case_id) < group.best[:2]:
            files, note = self._files(impl, failure)
            if files:
                group.best = (list(size), failure.case_id, failure.verdict, files)
                group.first, group.note = next(iter(files)), None
            elif group.best is None:
                group.note = note
        return str(self.root / slug / group.first) if group.first else None

    @staticmethod
    def _files(impl, failure: Failure) -> tuple[dict | None, str | None]:
        make = getattr(impl, "repro_files", None)
        if make is None:
            return None, f"{impl.name} defines no repro_files: nothing written"
        try:
            return check_files(make(failure), impl.name), None
        except NotSupported as err:
            return None, f"{impl.name}: no repro: {err}"
        except ConformanceError as err:
            return None, str(err)
        except Exception as err:  # noqa: BLE001 -- a broken repro_files costs its repro, never the run
            return None, f"{impl.name}.repro_files failed: {type(err).__name__}: {err}"

    def flush(self) -> list[dict]:
        """Write each group's smallest case under ``DIR/.candidates/``; the groups as plain data (for xdist)."""
        start = time.perf_counter()
        out = []
        for group in self.groups.values():
            entry = {"key": group.key, "slug": group.slug, "members": list(group.members), "note": group.note,
                     "best": None}
            if group.best is not None:
                size, case_id, verdict, files = group.best
                where = [CANDIDATES, group.slug, safe_name(case_id)[:60] + "-" + digest(case_id)]
                for name, data in files.items():
                    write_inside(self.root, where + name.split("/"), data)
                entry["best"] = {"size": size, "case_id": case_id, "verdict": verdict, "dir": "/".join(where),
                                 "files": list(files)}
            out.append(entry)
        self.seconds += time.perf_counter() - start
        return out


def one_line(text: str, limit: int = 400) -> str:
    """A failure message as a verdict: its first line less the case id, whitespace collapsed."""
    first = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return " ".join(first.split())[:limit]


# -- building a Failure from what the checker saw ---------------------------------------------------------------
def bounds(tolerances: dict, expected: dict) -> tuple[dict, str]:
    """(role -> {dtype, shape, atol, rtol}, the tolerance in words) for the outputs' tolerances."""
    out, words = {}, []
    for role, tol in tolerances.items():
        shape = tuple(np.shape(expected.get(role)))
        if tol is None:   # an empty output: its shape and dtype are the whole contract
            continue
        element = getattr(tol, "element_atol", None)
        atol = float(tol.atol) if element is None else np.asarray(element, dtype=np.float64).reshape(shape)
        out[role] = {"dtype": tol.dtype, "shape": shape, "atol": atol, "rtol": float(tol.rtol)}
        words.append(f"{role}: {tolerance_text(tol)}")
    return out, "; ".join(words) or "empty outputs: shapes and dtypes only"


def expected_accepted(reference: dict, tolerances: dict, shapes: dict) -> dict:
    """The contract's outcome for an accepted call: the float64 reference, its tolerance, the declared outputs."""
    outputs = {role: np.asarray(reference[role], dtype=np.float64) for role in shapes if role in reference}
    found, words = bounds(tolerances, outputs)
    for role, (shape, dtype) in shapes.items():   # an empty output has no tolerance, only its shape and dtype
        found.setdefault(role, {"dtype": dtype, "shape": tuple(shape), "atol": 0.0, "rtol": 0.0})
    return {"outcome": "accepted", "outputs": outputs, "tolerance": words, "bounds": found}
