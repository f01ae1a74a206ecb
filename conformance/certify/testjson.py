"""``test.json``: a package's correctness cases with their inputs, expected outputs and tolerances.

``build_test(package)`` makes it from the generated cases and the float64 reference; ``load_test_cases(package)``
reads it back as cases that run next to the generated ones, checked against the stored data. The format is
documented in ``specs/README.md``; ``conformance export`` writes it beside the manifest.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import cases as case_generator
from cases.data import MAX_CASE_ELEMENTS, Recipe, make_inputs
from cases.model import Case
from cases.profiles import PROFILES, profile_from_dict, profile_to_dict
from conformance.certify.device_truth import plan_context
from conformance.engine.package import Package
from conformance.engine.planner import Planner
from conformance.errors import ConformanceError, ManifestError
from conformance.files import MAX_DATA_FILE, read_confined
from conformance.ops import record_for
from conformance.ops.registry import find
from reference import ElementTolerance

TEST_FORMAT = "webgpu-kernel-conformance/test@1"
TEST_FILE = "test.json"
#: Accepted cases with more input elements than this are not shipped (their data would dominate the file).
MAX_ELEMENTS = MAX_CASE_ELEMENTS
#: Prefix of the ids of stored cases, so that they never collide with the generated ones.
ID_PREFIX = "test.json/"


# -- encoding ---------------------------------------------------------------------------------
def encode_array(a: np.ndarray) -> dict:
    a = np.asarray(a)
    little = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return {
        "shape": list(a.shape),
        "dtype": a.dtype.name,
        "data": base64.b64encode(np.ascontiguousarray(little).tobytes()).decode("ascii"),
    }


def decode_array(d: dict) -> np.ndarray:
    dtype = np.dtype(d["dtype"]).newbyteorder("<")
    shape = tuple(int(s) for s in d["shape"])
    if "data" not in d:  # shape-only (a large rejected call): zeros stand in, only the shape matters
        return np.zeros(shape, dtype=dtype.newbyteorder("="))
    if not isinstance(d["data"], str):
        raise ValueError(f"{d['dtype']}{list(shape)}: data must be base64 text")
    raw = base64.b64decode(d["data"], validate=True)
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise ManifestError(
            f"{d['dtype']}{list(shape)}: data has {len(raw)} bytes, expected {math.prod(shape) * dtype.itemsize}",
            file=TEST_FILE,
        )
    return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def _floats(a: np.ndarray) -> list:
    """Float64 values, flattened in C order; NaN (unconstrained) as null."""
    return [None if math.isnan(v) else float(v) for v in np.asarray(a, dtype=np.float64).ravel().tolist()]


# -- test.json ---------------------------------------------------------------------------------
def build_test(package: Package, max_elements: int = MAX_ELEMENTS) -> dict:
    m = package.manifest
    record, planner = find(m.op_id), Planner(m)
    out_cases, profiles, left_out = [], {}, 0
    for case in case_generator.generate(package):
        numel = sum(math.prod(a[0]) for a in case.inputs.values() if a is not None)
        if case.heavy or (case.accepted and numel > max_elements):
            left_out += 1
            continue
        item = {
            "id": case.id,
            "family": case.family,
            "markers": list(case.markers),
            "profile": case.profile.name,
            "tunables": dict(case.tunables),
            "expect": case.expect,
        }
        if case.attributes:
            item["attributes"] = dict(case.attributes)
        profiles.setdefault(case.profile.name, profile_to_dict(case.profile))
        if numel <= max_elements:
            arrays = make_inputs(case)
            item["inputs"] = {r: None if a is None else encode_array(a) for r, a in arrays.items()}
        else:  # a rejection too large to ship: its shapes are enough
            arrays = None
            item["inputs"] = {
                r: None if a is None else {"shape": list(a[0]), "dtype": a[1]} for r, a in case.inputs.items()
            }
        if case.accepted:
            item["outputs"], item["tolerance"] = _expected(record, m.op_id, case, arrays, plan_context(planner, case))
        out_cases.append(item)
    return {
        "format": TEST_FORMAT,
        "package": package.name,  # with @N for a version beyond 1
        "manifest": {"file": "manifest.json", "sha256": m.sha256},
        "generator": {"suite": "webgpu-kernel-conformance", "maxElements": max_elements, "leftOut": left_out},
        "profiles": profiles,
        "cases": out_cases,
    }


def _expected(record, op: str, case, arrays, plan) -> tuple[dict, dict]:
    """Expected outputs and their tolerances: per element (``elementAtol``) where the model depends on the data,
    with the record's tolerance parameters beside them. Empty outputs need no record."""
    outputs = case.expect["outputs"]
    if record is None and all(math.prod(o["shape"]) == 0 for o in outputs.values()):
        return {role: [] for role in outputs}, {}
    record = record or record_for(op)
    attributes = dict(case.attributes) or None
    expected = record.compute(arrays, attributes)
    tolerance = {}
    for role, o in outputs.items():
        tol = record.tolerance_for(o["dtype"], arrays, attributes, plan)
        entry = {"atol": tol.atol, "rtol": tol.rtol, "dtype": tol.dtype, "reason": tol.reason}
        element = tol.element_atol if isinstance(tol, ElementTolerance) else None
        if element is not None:
            entry["elementAtol"] = np.broadcast_to(element, tuple(o["shape"])).ravel().tolist()
        if record.tolerance_parameters is not None:
            entry["parameters"] = record.tolerance_parameters(o["dtype"], arrays, attributes)
        tolerance[role] = entry
    return {role: _floats(expected[role]) for role in outputs}, tolerance


# -- reading test.json back ----------------------------------------------------------------------
@dataclass(frozen=True)
class Stored:
    """What a stored case carries besides the Case: its inputs, expected outputs and tolerances."""

    inputs: dict
    outputs: dict
    tolerance: dict
    source: str

    def arrays(self) -> dict:
        return {r: None if d is None else decode_array(d) for r, d in self.inputs.items()}


def test_json_path(package: Package) -> Path | None:
    """``test.json`` beside the manifest (either layout); anything of that name, for the reader to refuse
    unless it is a regular file of the package."""
    path = package.root / TEST_FILE
    return path if os.path.lexists(path) else None


def load_test_cases(package: Package, path: Path | None = None) -> list:
    """The stored cases of ``test.json`` as ``cases.Case`` objects with a ``stored`` attribute."""
    root = package.root if path is None else Path(path).parent  # a caller's own file: confined to its folder
    path = path or test_json_path(package)
    if path is None:
        return []
    try:
        data = json.loads(read_confined(root, path, MAX_DATA_FILE))
    except ManifestError:
        raise
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"cannot read it: {exc}", file=str(path)) from None
    if not isinstance(data, dict):
        raise ManifestError(f"expected a JSON object at the top level, got {type(data).__name__}", file=str(path))
    if data.get("format") != TEST_FORMAT:
        raise ManifestError(f"format {data.get('format')!r}, expected {TEST_FORMAT!r}", file=str(path))
    if data.get("package") != package.name:
        raise ManifestError(f"holds cases of {data.get('package')!r}, not of {package.name!r}", file=str(path))
    pointer = "/profiles"
    try:  # a malformed file is this package's error, located, never a crash of the run
        profiles = {name: profile_from_dict(p) for name, p in data.get("profiles", {}).items()}
        out = []
        for i, item in enumerate(data["cases"]):
            pointer = f"/cases/{i}"
            out.append(_stored_case(package, item, profiles, path))
    except ConformanceError:
        raise
    except ValueError as exc:
        raise ManifestError(f"malformed: {exc}", file=str(path), pointer=pointer) from None
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ManifestError(f"malformed: {type(exc).__name__}: {exc}", file=str(path), pointer=pointer) from None
    return out


#: A stored case id (after ``test.json/``): printable, no newline or backtick, of a length any report takes.
STORED_ID = re.compile(r"[A-Za-z0-9_.@~#=+,:;/\[\]()<>' -]{1,200}")
#: The most elements a shape-only (rejected) stored input may claim: zeros stand in for it.
MAX_SHAPE_ONLY = 1 << 28


def _shape(value, where: str) -> tuple[int, ...]:
    if (
        not isinstance(value, list)
        or len(value) > 8
        or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in value)
    ):
        raise ValueError(f"{where}: expected a shape, a list of at most 8 non-negative integers, got {value!r:.80}")
    return tuple(value)


def _check_item(item) -> None:
    """A stored case as ``export`` writes it, else ValueError saying which field is wrong and what it should be
    (checked before anything is decoded or allocated: a negative or huge shape, outputs shorter than their
    shape, a tolerance without ``atol``...)."""
    if not isinstance(item, dict):
        raise ValueError(f"expected a case object, got {type(item).__name__}")
    if not isinstance(item.get("id"), str) or not STORED_ID.fullmatch(item["id"]):
        raise ValueError(
            f"id: expected up to 200 printable characters (no newline or backtick), got {str(item.get('id'))[:80]!r}"
        )
    markers = item.get("markers", [])
    if not isinstance(markers, list) or not all(isinstance(m, str) and len(m) <= 64 for m in markers):
        raise ValueError("markers: expected a list of strings of at most 64 characters")
    inputs = item.get("inputs")
    if not isinstance(inputs, dict):
        raise ValueError("inputs: expected an object of role -> array (or null)")
    expect = item.get("expect")
    if not isinstance(expect, dict) or expect.get("outcome") not in ("accepted", "rejected"):
        raise ValueError("expect: expected an object with outcome 'accepted' or 'rejected'")
    for role, d in inputs.items():
        if d is None:
            continue
        if not isinstance(d, dict) or not isinstance(d.get("dtype"), str):
            raise ValueError(f"inputs/{role}: expected {{shape, dtype, data}}")
        shape = _shape(d.get("shape"), f"inputs/{role}/shape")
        if "data" not in d and (expect["outcome"] == "accepted" or math.prod(shape) > MAX_SHAPE_ONLY):
            raise ValueError(
                f"inputs/{role}: no data (only a rejected call of at most {MAX_SHAPE_ONLY} elements "
                f"may be stored by its shape alone)"
            )
        decode_array(d)  # its data must hold exactly what the shape and dtype say
    if expect["outcome"] == "rejected":
        return
    declared = expect.get("outputs")
    if (
        not isinstance(declared, dict)
        or not isinstance(expect.get("variant"), str)
        or not isinstance(expect.get("passes"), list)
    ):
        raise ValueError("expect: an accepted case needs 'variant', 'passes' and 'outputs'")
    outputs, tolerance = item.get("outputs"), item.get("tolerance")
    if not isinstance(outputs, dict) or not isinstance(tolerance, dict):
        raise ValueError("outputs and tolerance: expected objects of role -> values / tolerance")
    for role, o in declared.items():
        if not isinstance(o, dict) or not isinstance(o.get("dtype"), str):
            raise ValueError(f"expect/outputs/{role}: expected {{shape, dtype}}")
        count = math.prod(_shape(o.get("shape"), f"expect/outputs/{role}/shape"))
        values = outputs.get(role)
        if (
            not isinstance(values, list)
            or len(values) != count
            or not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values)
        ):
            raise ValueError(
                f"outputs/{role}: expected {count} numbers (null: unconstrained), got "
                f"{len(values) if isinstance(values, list) else type(values).__name__}"
            )
        t = tolerance.get(role)
        if not isinstance(t, dict) or not all(
            isinstance(t.get(k), (int, float)) and not isinstance(t.get(k), bool) and t[k] >= 0
            for k in ("atol", "rtol")
        ):
            raise ValueError(f"tolerance/{role}: expected non-negative numbers 'atol' and 'rtol'")
        element = t.get("elementAtol")
        if element is not None and (not isinstance(element, list) or len(element) != count):
            raise ValueError(f"tolerance/{role}/elementAtol: expected {count} numbers")


def _stored_case(package: Package, item: dict, profiles: dict, path: Path):
    name = item.get("profile", "baseline") if isinstance(item, dict) else "baseline"
    if name not in profiles and name not in PROFILES:
        raise ValueError(f"unknown profile {name!r} (known: {', '.join(sorted({*profiles, *PROFILES}))})")
    _check_item(item)
    profile = profiles.get(name) or PROFILES[name]
    inputs = {r: None if d is None else (tuple(d["shape"]), d["dtype"]) for r, d in item["inputs"].items()}
    stored = Stored(item["inputs"], item.get("outputs", {}), item.get("tolerance", {}), str(path))
    return StoredCase(
        ID_PREFIX + item["id"],
        package.name,
        item.get("family", "stored"),
        inputs,
        profile,
        dict(item.get("tunables", {})),
        Recipe(0),
        item["expect"],
        False,
        tuple(item.get("markers", ())) + ("test_json",),
        attributes=dict(item.get("attributes", {})),
        stored=stored,
    )


@dataclass(frozen=True)
class StoredCase(Case):
    """A case read from test.json: its inputs and expected outputs are stored, not regenerated."""

    stored: Stored | None = None
