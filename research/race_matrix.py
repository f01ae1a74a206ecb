"""Which planted faults a device shows, plainly and under --stress: the row ops' `race`, `barrier`,
`lane-dropped` and `invocation-dropped` mutants (conformance.tools.mutate), each run over the package's
cases of --families (default: values-extremes) until the first failure, once plainly and once with
--stress RUNS; one JSON line per mutant, then (--baseline) the seconds the shipped package takes over the same cases, plainly and under --stress.

    python research/race_matrix.py --webgpu dawn --only race --stress 3 > out.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import cases
from conformance.certify.checker import Checker
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import CaseSkipped, verdict_for
from conformance.engine.package import load_package
from conformance.tools.mutate.mutants import mark_unrendered, package_mutants

PACKAGES = ("com.microsoft.Softmax", "com.microsoft.LayerNormalization")
KINDS = ("race", "barrier", "lane-dropped", "invocation-dropped")


def first_failure(impl, package, case_list, stress: int) -> tuple[str | None, float]:
    checker = Checker(impl, stress_runs=stress)
    start = time.monotonic()
    for case in case_list:
        try:
            checker.check(case, package, verdict_for(case))
        except CaseSkipped:
            continue
        except Exception as err:  # CaseFailed, or any other error of a case: the plugin reports it as a failure
            return f"{case.id}: " + " ".join(str(err).split())[:200], time.monotonic() - start
    return None, time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webgpu", default="wgpu")
    parser.add_argument("--device", default="vulkan")
    parser.add_argument("--only", default="|".join(KINDS), help="mutant kinds (a regular expression)")
    parser.add_argument("--stress", type=int, default=3)
    parser.add_argument("--plain", action="store_true", help="also run each mutant without --stress")
    parser.add_argument(
        "--families",
        default="values-extremes",
        help="the cases the mutants meet: these families (a regular expression over the family "
        "markers; default values-extremes)",
    )
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also run the shipped package over the same cases, plainly and under --stress (what the "
        "cases and --stress cost; --families '.*' for every case)",
    )
    parser.add_argument("--packages", default=",".join(PACKAGES))
    args = parser.parse_args()
    impl = ManifestImplementation(device=args.device, webgpu=args.webgpu)
    for name in args.packages.split(","):
        package = load_package(name)
        case_list = [c for c in cases.generate(package) if c.accepted and not c.heavy]
        chosen = [c for c in case_list if any(re.fullmatch(args.families.replace("-", "_"), f) for f in c.markers)]
        mutants = [m for m in package_mutants(package) if re.fullmatch(args.only, m.kind)]
        mark_unrendered(package.root, mutants)
        for m in mutants:
            if m.status == "equivalent":
                continue
            with tempfile.TemporaryDirectory() as tmp:
                copy = load_package(m.materialize(package.root, Path(tmp) / package.root.name))
                row = {
                    "mutant": m.id,
                    "kind": m.kind,
                    "description": m.description.split(" (line")[0],
                    "webgpu": args.webgpu,
                }
                for label, stress in (("plain", 0), ("stress", args.stress)):
                    if label == "plain" and not args.plain:
                        continue
                    killer, seconds = first_failure(impl, copy, chosen, stress)
                    row[label] = {"killed_by": killer, "seconds": round(seconds, 1)}
                row["device"] = (impl.describe() or {}).get("adapter")
                impl.device.clear_pipelines()
            print(json.dumps(row), flush=True)
        for label, stress in (("plain", 0), ("stress", args.stress)) if args.baseline else ():
            killer, seconds = first_failure(impl, package, chosen, stress)
            print(
                json.dumps(
                    {
                        "package": name,
                        "run": label,
                        "cases": len(chosen),
                        "failure": killer,
                        "seconds": round(seconds, 1),
                        "per_case_ms": round(1000 * seconds / len(chosen), 1),
                        "webgpu": args.webgpu,
                    }
                ),
                flush=True,
            )
            impl.device.clear_pipelines()
    return 0


if __name__ == "__main__":
    sys.exit(main())
