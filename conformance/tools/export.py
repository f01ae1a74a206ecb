"""``conformance export``: ``test.json`` and ``bench.json`` beside a package's manifest.

``export_package(dir)`` writes both beside the manifest (``<pkg>/`` or, in the published layout,
``<pkg>/build/webgpu/``). ``test.json`` is built by :mod:`conformance.certify.testjson`; ``bench.json`` lists
the benchmark and tuning cases. Both formats are documented in ``specs/README.md``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from conformance.certify.testjson import MAX_ELEMENTS, TEST_FILE, build_test
from conformance.engine.call import make_call
from conformance.engine.package import Package, load_package
from conformance.engine.planner import Planner
from conformance.engine.profile import BASELINE
from conformance.errors import ContractError, ExpressionError
from conformance.files import check_output, write_output
from conformance.tools import bench

BENCH_FORMAT = "webgpu-kernel-conformance/bench@1"
BENCH_FILE = "bench.json"


# -- bench.json --------------------------------------------------------------------------------
def build_bench(package: Package) -> dict:
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
    test_path, bench_path = target / TEST_FILE, target / BENCH_FILE
    for path in (test_path, bench_path):   # a symlink or special file is refused before any work
        check_output(path)
    target.mkdir(parents=True, exist_ok=True)
    write_output(test_path, json.dumps(build_test(package, max_elements), separators=(",", ":")) + "\n")
    write_output(bench_path, json.dumps(build_bench(package), indent=1) + "\n")
    return test_path, bench_path
