"""``accuracy``: max absolute and relative error per package, variant and dtype over the generated cases."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from conformance.cli import add_packages_and_device
from conformance.cli.lazy import on_use

np = on_use("numpy")
cases = on_use("cases")
make_inputs = on_use("cases.data", "make_inputs")
find_package_dirs = on_use("conformance.engine.package", "find_package_dirs")
load_package = on_use("conformance.engine.package", "load_package")
get_device = on_use("conformance.gpu.device", "get_device")
Kernel = on_use("conformance.gpu.kernel", "Kernel")
record_for = on_use("conformance.ops", "record_for")

#: Relative error is taken where |expected| is at least this (below it the absolute error is the measure).
REL_FLOOR = 1e-3


def _accuracy(args) -> int:
    device = get_device(args.device, args.adapter, args.webgpu)
    table: dict = defaultdict(lambda: {"cases": 0, "max_abs": 0.0, "max_rel": 0.0})
    for directory in find_package_dirs(Path(args.specs)):
        package = load_package(directory)
        kernel = Kernel(package, device)
        record = record_for(package.manifest.op_id)
        for case in cases.generate(package):
            if case.expect["outcome"] != "accepted" or case.heavy or case.profile.exceeds(device.profile):
                continue
            inputs = make_inputs(case)
            plan, run = kernel.run(case.profile, case.tunables, **inputs)
            for role, y in run.outputs.items():
                expected = record.compute(inputs, None)[role]
                ok = np.isfinite(expected)
                if not ok.any():
                    continue
                err = np.abs(y.astype(np.float64)[ok] - expected[ok])
                big = np.abs(expected[ok]) >= REL_FLOOR
                cell = table[(package.name, plan.variant, str(y.dtype))]
                cell["cases"] += 1
                cell["max_abs"] = max(cell["max_abs"], float(err.max()))
                if big.any():
                    cell["max_rel"] = max(cell["max_rel"], float((err[big] / np.abs(expected[ok][big])).max()))
    rows = [{"package": p, "variant": v, "dtype": d, **c} for (p, v, d), c in sorted(table.items())]
    print(
        f"device: {device.summary['adapter']} ({device.summary['backend']}); relative error where "
        f"|expected| >= {REL_FLOOR}"
    )
    print(f"{'package':<24}{'variant':<20}{'dtype':<9}{'cases':>6}{'max abs':>12}{'max rel':>12}")
    for r in rows:
        print(
            f"{r['package']:<24}{r['variant']:<20}{r['dtype']:<9}{r['cases']:>6}{r['max_abs']:>12.3e}"
            f"{r['max_rel']:>12.3e}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device.summary, "rows": rows}, indent=2) + "\n")
    return 0


def register(sub) -> None:
    a = sub.add_parser("accuracy", help="max absolute/relative error per variant and dtype over the cases")
    add_packages_and_device(a)
    a.add_argument("--json", default=None)
    a.set_defaults(func=_accuracy)
