"""Standalone reproductions of an outside implementation's failures (``--repro-dir DIR``), grouped and indexed.

A failing case of an implementation outside this suite (a divergence, or outputs that break the contract) becomes
a :class:`Failure`: the call, what the contract expects and what the implementation did, in plain NumPy and
strings. An implementation that defines ``repro_files(self, failure) -> dict[str, bytes]`` turns one into files
that reproduce it with the implementation alone (relative name -> bytes; the first entry is the one to run; it
may raise :class:`~conformance.certify.implementations.NotSupported` with why not). Identical failures (same op,
implementation, provider, kind and :func:`signature`) form one group, reproduced once, by its smallest case:

* each process (every xdist worker) writes, per group, its smallest case so far under ``DIR/.candidates/``
  (:class:`ReproCollector`), and each failing case's entry (its group, key, repro path) travels with its test
  report to the process that writes the report;
* that process (:func:`conformance.certify.repro.index.finalize`) moves each group's smallest candidate to
  ``DIR/<group>/`` and writes ``DIR/index.json`` and ``DIR/index.md``: the groups, their member case ids and
  counts, and for a group without a repro, why.

Every name written is checked (:func:`check_files`, :func:`~conformance.certify.repro.index.safe_name`), every
path stays inside DIR, and files are replaced
atomically (:func:`conformance.files.write_output`).

``Failure.expected`` for an accepted call also holds ``"bounds"``: role -> ``{"dtype", "shape", "atol" (a number
or an array of the output's shape), "rtol"}``, the tolerance as numbers, which ``"tolerance"`` states in words.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conformance.certify.implementations import Hooks, NotSupported
from conformance.certify.repro.index import CANDIDATES, digest, remove_candidate, safe_name, write_inside
from conformance.errors import ConformanceError
from reference import ElementTolerance
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

    kind: str  # one of KINDS
    verdict: str  # one line
    case_id: str
    package: str  # the case's package id (its op id, or <op id>@N)
    inputs: dict  # role -> np.ndarray | None
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
            reason = reason.split(": ", 2)[-1]  # less the first variant's id: each package version names its own
            return _VALUE.sub("", reason).strip()
        return _NUMBER.sub("N", reason).strip()
    if failure.kind == "rejects-accepted":
        return _NUMBER.sub("N", str(failure.observed.get("message") or "")).strip()
    dtypes = ",".join(sorted({a.dtype.name for a in failure.inputs.values() if a is not None}))
    return f"{dtypes}: " + _NUMBER.sub("N", failure.verdict.split(":")[0]).strip()


def group_key(failure: Failure, impl) -> dict:
    found = signature(failure)
    if found.startswith(f"{impl.name}: "):  # an implementation's messages that start with its name
        found = found[len(impl.name) + 2 :]
    return {
        "implementation": impl.name,
        "provider": Hooks(impl).provider,
        "op": _op(failure.package),
        "kind": failure.kind,
        "signature": found,
    }


def group_slug(key: dict) -> str:
    """A directory name for a group: readable (op, kind, a word of the signature) and unique (a hash of the key)."""
    text = key["signature"]
    if key["kind"] == "rejects-accepted":  # the implementation's own words come last
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
            raise ConformanceError(
                f"{who}.repro_files: file name {name!r} is not a relative name of letters, digits, "
                f"'.', '_' and '-' (at most one folder deep)"
            )
        if not isinstance(data, (bytes, bytearray)):
            raise ConformanceError(f"{who}.repro_files: {name}: {type(data).__name__}, not bytes")
    return {name: bytes(data) for name, data in files.items()}


class ReproCollector:
    """Per process: for each group, its smallest case so far, whose files are written at once under
    ``DIR/.candidates/<group>/`` (a worker that dies later keeps what it wrote)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.best: dict[str, tuple] = {}  # slug -> (size, case id, candidate name)
        self.first: dict[str, str] = {}  # slug -> the file to run
        self.notes: dict[str, str] = {}  # slug -> why the group has no repro (so far)

    def add(self, impl, failure: Failure) -> dict:
        """Record ``failure`` of ``impl``: the plain entry the index is made of (``slug``, ``key``, ``case_id``,
        ``repro``: the path of its group's repro or None, ``note``: why none, ``seconds`` spent here)."""
        start = time.perf_counter()
        key = group_key(failure, impl)
        slug = group_slug(key)
        size = list(failure_size(failure))
        have = self.best.get(slug)
        if have is None or (size, failure.case_id) < have[:2]:
            files, note = self._files(impl, failure)
            try:
                name = self._write(slug, size, failure, files) if files else None
            except ConformanceError as err:  # DIR gone or replaced by a link mid-run: this repro is lost, said
                name, note = None, f"not written: {err}"
            if name:
                if have is not None:
                    remove_candidate(self.root, slug, have[2])
                self.best[slug], self.first[slug] = (size, failure.case_id, name), next(iter(files))
            elif have is None:
                self.notes[slug] = note
        first = self.first.get(slug)
        return {
            "slug": slug,
            "key": key,
            "case_id": failure.case_id,
            "repro": str(self.root / slug / first) if first else None,
            "note": None if first else self.notes.get(slug),
            "seconds": time.perf_counter() - start,
        }

    def add_unreproducible(self, impl, case_id: str, package: str, message: str) -> dict:
        """Record a failure that is no call's outcome (a node placed off the provider, a page that stopped...):
        no repro can show it, and the index says so in its own group instead of leaving the case out."""
        text = one_line(message.split(": ", 1)[1] if message.startswith(f"{case_id}: ") else message)
        key = {
            "implementation": impl.name,
            "provider": Hooks(impl).provider,
            "op": _op(package),
            "kind": "not-reproducible",
            "signature": _NUMBER.sub("N", text),
        }
        slug = group_slug(key)
        note = (
            "no standalone repro: this failure is not a call's outcome that the implementation alone shows; "
            "rerun the case with its rerun command"
        )
        self.notes.setdefault(slug, note)
        return {"slug": slug, "key": key, "case_id": case_id, "repro": None, "note": note, "seconds": 0.0}

    @staticmethod
    def _files(impl, failure: Failure) -> tuple[dict | None, str | None]:
        hooks = Hooks(impl)
        if not hooks.makes_repros:
            return None, f"{impl.name} defines no repro_files: nothing written"
        try:
            return check_files(hooks.repro_files(failure), impl.name), None
        except NotSupported as err:
            return None, f"{impl.name}: no repro: {err}"
        except ConformanceError as err:
            return None, str(err)
        except Exception as err:  # noqa: BLE001 -- a broken repro_files costs its repro, never the run
            return None, f"{impl.name}.repro_files failed: {type(err).__name__}: {err}"

    def _write(self, slug: str, size: list, failure: Failure, files: dict) -> str:
        name = safe_name(failure.case_id)[:60] + "-" + digest(failure.case_id)
        for path, data in files.items():
            write_inside(self.root, [CANDIDATES, slug, name] + path.split("/"), data)
        about = {"size": size, "case_id": failure.case_id, "verdict": failure.verdict, "files": list(files)}
        write_inside(self.root, [CANDIDATES, slug, name + ".json"], json.dumps(about).encode())
        return name


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
        if tol is None:  # an empty output: its shape and dtype are the whole contract
            continue
        element = tol.element_atol if isinstance(tol, ElementTolerance) else None
        atol = float(tol.atol) if element is None else np.asarray(element, dtype=np.float64).reshape(shape)
        out[role] = {"dtype": tol.dtype, "shape": shape, "atol": atol, "rtol": float(tol.rtol)}
        words.append(f"{role}: {tolerance_text(tol)}")
    return out, "; ".join(words) or "empty outputs: shapes and dtypes only"


def expected_accepted(reference: dict, tolerances: dict, shapes: dict) -> dict:
    """The contract's outcome for an accepted call: the float64 reference, its tolerance, the declared outputs."""
    outputs = {role: np.asarray(reference[role], dtype=np.float64) for role in shapes if role in reference}
    found, words = bounds(tolerances, outputs)
    for role, (shape, dtype) in shapes.items():  # an empty output has no tolerance, only its shape and dtype
        found.setdefault(role, {"dtype": dtype, "shape": tuple(shape), "atol": 0.0, "rtol": 0.0})
    return {"outcome": "accepted", "outputs": outputs, "tolerance": words, "bounds": found}
