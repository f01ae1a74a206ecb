"""``test.json`` and ``bench.json``: a package's correctness and benchmark cases, shipped beside its manifest.

``export_package(dir)`` writes both beside the manifest (``<pkg>/`` or, in the published layout,
``<pkg>/build/webgpu/``); ``load_test_cases(package)`` reads ``test.json`` back as cases the pytest plugin
runs next to the generated ones, checked against the stored inputs and expected outputs.
Both formats are documented in ``specs/README.md``.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cases.data import Recipe
from cases.model import Case
from cases.profiles import PROFILES, profile_from_dict

from conformance.errors import ManifestError
from conformance.engine.package import Package, load_package

TEST_FORMAT = "webgpu-kernel-conformance/test@1"
BENCH_FORMAT = "webgpu-kernel-conformance/bench@1"
TEST_FILE, BENCH_FILE = "test.json", "bench.json"
#: Accepted cases with more input elements than this are not shipped (their data would dominate the file).
MAX_ELEMENTS = 4096
#: Prefix of the ids of stored cases, so that they never collide with the generated ones.
ID_PREFIX = "test.json/"


# -- encoding ---------------------------------------------------------------------------------
def encode_array(a: np.ndarray) -> dict:
    a = np.asarray(a)
    little = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return {"shape": list(a.shape), "dtype": a.dtype.name,
            "data": base64.b64encode(np.ascontiguousarray(little).tobytes()).decode("ascii")}


def decode_array(d: dict) -> np.ndarray:
    dtype = np.dtype(d["dtype"]).newbyteorder("<")
    shape = tuple(int(s) for s in d["shape"])
    if "data" not in d:      # shape-only (a large rejected call): zeros stand in, only the shape matters
        return np.zeros(shape, dtype=dtype.newbyteorder("="))
    raw = base64.b64decode(d["data"])
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise ManifestError(f"{d['dtype']}{list(shape)}: data has {len(raw)} bytes, expected "
                            f"{math.prod(shape) * dtype.itemsize}", file=TEST_FILE)
    return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def _floats(a: np.ndarray) -> list:
    """Float64 values, flattened in C order; NaN (unconstrained) as null."""
    return [None if math.isnan(v) else float(v) for v in np.asarray(a, dtype=np.float64).ravel().tolist()]


# -- test.json ---------------------------------------------------------------------------------
def build_test(package: Package, max_elements: int = MAX_ELEMENTS) -> dict:
    import cases as case_generator
    from cases.data import make_inputs
    from cases.profiles import profile_to_dict
    from reference import reference_for
    m = package.manifest
    ref = reference_for(m.domain, m.name)
    out_cases, profiles, left_out = [], {}, 0
    for case in case_generator.generate(package):
        numel = sum(math.prod(a[0]) for a in case.inputs.values() if a is not None)
        if case.heavy or (case.accepted and numel > max_elements):
            left_out += 1
            continue
        item = {"id": case.id, "family": case.family, "markers": list(case.markers),
                "profile": case.profile.name, "tunables": dict(case.tunables), "expect": case.expect}
        profiles.setdefault(case.profile.name, profile_to_dict(case.profile))
        if numel <= max_elements:
            arrays = make_inputs(case)
            item["inputs"] = {r: None if a is None else encode_array(a) for r, a in arrays.items()}
        else:  # a rejection too large to ship: its shapes are enough
            arrays = None
            item["inputs"] = {r: None if a is None else {"shape": list(a[0]), "dtype": a[1]}
                              for r, a in case.inputs.items()}
        if case.accepted:
            expected = ref.compute(arrays)
            item["outputs"] = {role: _floats(expected[role]) for role in case.expect["outputs"]}
            item["tolerance"] = {}
            for role, o in case.expect["outputs"].items():
                tol = ref.tolerance(o["dtype"])
                item["tolerance"][role] = {"atol": tol.atol, "rtol": tol.rtol, "dtype": tol.dtype,
                                           "reason": tol.reason}
        out_cases.append(item)
    return {"format": TEST_FORMAT, "package": m.op_id,
            "manifest": {"file": "manifest.json", "sha256": m.sha256},
            "generator": {"suite": "webgpu-kernel-conformance", "maxElements": max_elements,
                          "leftOut": left_out},
            "profiles": profiles, "cases": out_cases}


# -- bench.json --------------------------------------------------------------------------------
def build_bench(package: Package) -> dict:
    from conformance.tools import bench
    from conformance.engine.call import make_call
    from conformance.errors import ContractError, ExpressionError
    from conformance.engine.planner import Planner
    from conformance.engine.profile import BASELINE
    m = package.manifest
    planner = Planner(m)
    dtypes = sorted({d for allowed in m.type_constraints.values() for d in allowed})

    class _K:  # bench_calls only reads .manifest
        manifest = m
    out = []
    for args, with_optional in bench.bench_calls(_K, bench.SIZES, dtypes):
        try:
            plan = planner.plan(make_call(m, args, BASELINE, None))
            variant = plan.variant
        except (ContractError, ExpressionError) as err:
            variant = f"rejected: {getattr(err, 'reason', 'expression')}"
        shape, dtype = next(iter(args.values()))
        n = math.prod(shape)
        out.append({"id": f"{m.name}/{dtype}/" + "+".join(f"{r}{list(a[0])}" for r, a in args.items()),
                    "inputs": {r: {"shape": list(a[0]), "dtype": a[1]} for r, a in args.items()},
                    "elements": n, "bias": with_optional, "variantOnBaseline": variant})
    return {"format": BENCH_FORMAT, "package": m.op_id,
            "manifest": {"file": "manifest.json", "sha256": m.sha256},
            "sizes": list(bench.SIZES), "dtypes": dtypes,
            "tuning": {"tunables": {"WORKGROUP_SIZE": list(bench.WORKGROUP_SWEEP)},
                       "defaults": dict(m.tunables), "at": "the largest size that plans on the device"},
            "data": "normal(0, 2) float64 draws from numpy.random.default_rng(0), a 65536-element block tiled",
            "cases": out}


def export_package(directory: Path, out: Path | None = None, max_elements: int = MAX_ELEMENTS) -> tuple[Path, Path]:
    package = load_package(Path(directory))
    target = Path(out) if out else package.root
    target.mkdir(parents=True, exist_ok=True)
    test_path, bench_path = target / TEST_FILE, target / BENCH_FILE
    test_path.write_text(json.dumps(build_test(package, max_elements), separators=(",", ":")) + "\n")
    bench_path.write_text(json.dumps(build_bench(package), indent=1) + "\n")
    return test_path, bench_path


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
    """``test.json`` beside the manifest (either layout)."""
    path = package.root / TEST_FILE
    return path if path.is_file() else None


def load_test_cases(package: Package, path: Path | None = None) -> list:
    """The stored cases of ``test.json`` as ``cases.Case`` objects with a ``stored`` attribute."""
    path = path or test_json_path(package)
    if path is None:
        return []
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ManifestError(f"cannot read it: {exc}", file=str(path)) from None
    if data.get("format") != TEST_FORMAT:
        raise ManifestError(f"format {data.get('format')!r}, expected {TEST_FORMAT!r}", file=str(path))
    if data.get("package") != package.name:
        raise ManifestError(f"holds cases of {data.get('package')!r}, not of {package.name!r}", file=str(path))
    profiles = {name: profile_from_dict(p) for name, p in data.get("profiles", {}).items()}
    out = []
    for item in data["cases"]:
        name = item.get("profile", "baseline")
        profile = profiles.get(name) or PROFILES[name]
        inputs = {r: None if d is None else (tuple(d["shape"]), d["dtype"]) for r, d in item["inputs"].items()}
        stored = Stored(item["inputs"], item.get("outputs", {}), item.get("tolerance", {}), str(path))
        out.append(StoredCase(ID_PREFIX + item["id"], package.name, item.get("family", "stored"), inputs, profile,
                              dict(item.get("tunables", {})), Recipe(0), item["expect"], False,
                              tuple(item.get("markers", ())) + ("test_json",), stored))
    return out


@dataclass(frozen=True)
class StoredCase(Case):
    """A case read from test.json: its inputs and expected outputs are stored, not regenerated."""

    stored: Stored | None = None


