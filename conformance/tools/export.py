"""``conformance export``: ``test.json``, ``bench.json`` and ``metadata.json`` beside a package's manifest.

``export_package(dir)`` writes them beside the manifest (``<pkg>/`` or, in the published layout,
``<pkg>/build/webgpu/``). ``test.json`` is built by :mod:`conformance.certify.testjson`; ``bench.json`` lists
the benchmark and tuning cases; ``metadata.json`` records the portable-subset check (whether a JavaScript loader's
engine, @huggingface/jinja, renders and evaluates the package as this suite does, and which version was asked).
The formats are documented in ``specs/README.md``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import cases
from conformance.certify.testjson import MAX_ELEMENTS, TEST_FILE, build_test
from conformance.engine.package import Package, load_package
from conformance.engine.planner import Planner
from conformance.engine.profile import BASELINE
from conformance.errors import ContractError, ExpressionError
from conformance.files import check_output, write_output
from conformance.impls.js_loader.published import template_digests
from conformance.tools import bench, portable
from conformance.tools.jsjinja import ENGINE, EngineUnavailable, JsJinja, open_engine

BENCH_FORMAT = "webgpu-kernel-conformance/bench@1"
BENCH_FILE = "bench.json"
METADATA_FORMAT = "webgpu-kernel-conformance/metadata@1"
METADATA_FILE = "metadata.json"


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
            plan = planner.plan_case(args, BASELINE)
            variant = plan.variant
        except (ContractError, ExpressionError) as err:
            variant = f"rejected: {getattr(err, 'reason', 'expression')}"
        shape, dtype = next(iter(args.values()))
        n = math.prod(shape)
        out.append(
            {
                "id": f"{m.name}/{dtype}/" + "+".join(f"{r}{list(a[0])}" for r, a in args.items()),
                "inputs": {r: {"shape": list(a[0]), "dtype": a[1]} for r, a in args.items()},
                "elements": n,
                "bias": with_optional,
                "variantOnBaseline": variant,
            }
        )
    return {
        "format": BENCH_FORMAT,
        "package": m.op_id,
        "manifest": {"file": "manifest.json", "sha256": m.sha256},
        "templates": template_digests(package),
        "sizes": list(bench.SIZES),
        "dtypes": dtypes,
        "tuning": {
            "tunables": {"WORKGROUP_SIZE": list(bench.WORKGROUP_SWEEP)},
            "defaults": dict(m.tunables),
            "at": "the largest size that plans on the device",
        },
        "data": "normal(0, 2) float64 draws from numpy.random.default_rng(0), a 65536-element block tiled",
        "cases": out,
    }


# -- metadata.json -----------------------------------------------------------------------------
def portable_subset(package: Package, engine: JsJinja | None) -> dict:
    """The portable-subset check's verdict for ``metadata.json``: passed or not, against which engine version,
    what was compared; without an engine, or where it compared no template (``portable.Stats.nothing_compared``),
    ``checked: false`` and why, never a pass (a difference found in the expressions still fails it)."""
    if engine is None:
        try:
            with open_engine() as running:
                return portable_subset(package, running)
        except EngineUnavailable as err:
            return {"engine": ENGINE, "checked": False, "reason": str(err)}
    problems, stats = portable.check(package, cases.generate(package), engine)
    vacuous = stats.nothing_compared()
    if vacuous and not problems:
        return {
            "engine": ENGINE,
            "version": engine.version,
            "checked": False,
            "reason": vacuous,
            "templateContexts": 0,
            "expressionEvaluations": stats.expressions,
        }
    return {
        "engine": ENGINE,
        "version": engine.version,
        "checked": True,
        "passed": not problems,
        "templateContexts": stats.contexts,
        "expressionEvaluations": stats.expressions,
        "errors": [f"{where}: {message}" for _, where, message in problems],
    }


def build_metadata(package: Package, engine: JsJinja | None = None) -> dict:
    m = package.manifest
    return {
        "format": METADATA_FORMAT,
        "package": m.op_id,
        "version": m.version,
        "manifest": {"file": "manifest.json", "sha256": m.sha256},
        "templates": template_digests(package),
        "portableSubset": portable_subset(package, engine),
    }


def export_package(
    directory: Path, out: Path | None = None, max_elements: int = MAX_ELEMENTS, engine: JsJinja | None = None
) -> tuple[Path, Path]:
    """Writes test.json, bench.json and metadata.json (returns the first two; the third sits beside them).
    ``engine``: a running @huggingface/jinja to check with (None: one is started for this package)."""
    package = load_package(Path(directory))
    target = Path(out) if out else package.root
    test_path, bench_path, meta_path = target / TEST_FILE, target / BENCH_FILE, target / METADATA_FILE
    for path in (test_path, bench_path, meta_path):  # a symlink or special file is refused before any work
        check_output(path)
    target.mkdir(parents=True, exist_ok=True)
    write_output(test_path, json.dumps(build_test(package, max_elements), separators=(",", ":")) + "\n")
    write_output(bench_path, json.dumps(build_bench(package), indent=1) + "\n")
    write_output(meta_path, json.dumps(build_metadata(package, engine), indent=1) + "\n")
    return test_path, bench_path
