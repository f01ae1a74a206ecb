"""The numbers the README states, from the golden files and (with --run) from timed runs here.

    PYTHONPATH=. python3 scripts/readme_numbers.py                 # cases per package, from cases/*.yaml
    PYTHONPATH=. python3 scripts/readme_numbers.py --run           # and the default run, timed, serial and -n 2
    PYTHONPATH=. python3 scripts/readme_numbers.py --run --repeat 2 --webgpu dawn
    PYTHONPATH=. python3 scripts/readme_numbers.py --bench         # the suite's own speed: planning, cases --check

Prints the case table of docs/manual/packages.md (Markdown, pasted as printed) and the total the manual quotes;
``tests/layout/test_readme_numbers.py`` fails when the manual's case counts differ from what this prints.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cases.golden import CASES_DIR, golden_path, load_golden  # noqa: E402
from conformance.config import REPO_SPECS  # noqa: E402
from conformance.engine.package import find_package_dirs, load_package  # noqa: E402


def case_counts(specs: Path = REPO_SPECS, golden: Path = CASES_DIR) -> dict[str, tuple[int, int]]:
    """Per shipped package: (cases of the default run, heavy cases that --run-heavy adds), from its golden file."""
    counts = {}
    for directory in find_package_dirs(specs):
        name = load_package(directory).name
        cases = load_golden(golden_path(golden, name))
        heavy = sum(1 for c in cases if c.heavy)
        counts[name] = (len(cases) - heavy, heavy)
    return counts


def case_table(counts: dict[str, tuple[int, int]]) -> str:
    lines = ["| package | cases | heavy (`--run-heavy`) |", "| --- | ---: | ---: |"]
    lines += [f"| `{name}` | {n:,} | {heavy:,} |" for name, (n, heavy) in sorted(counts.items())]
    lines.append(
        f"| all {len(counts)} | {sum(n for n, _ in counts.values()):,} | {sum(h for _, h in counts.values()):,} |"
    )
    return "\n".join(lines)


def timed_run(extra: list[str]) -> tuple[float, str]:
    """Wall-clock seconds of ``pytest conformance/ --device=vulkan -q`` with ``extra``, and its summary line."""
    cmd = [sys.executable, "-m", "pytest", "conformance/", "--device=vulkan", "-q", "-p", "no:cacheprovider", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {summary}")
    return elapsed, re.sub(r"=+", "", summary).strip()


def planning_bench(specs: Path = REPO_SPECS) -> list[tuple[str, float, float, int, int, int]]:
    """Per package: (op id, CPU s, wall s, plans asked for, plans made, expressions evaluated) of generating its
    golden cases, what ``python -m cases --check`` does per package (the work counts do not depend on the machine)."""
    from cases import generate
    from conformance.engine import expressions, planner

    counts = {"evaluated": 0, "made": 0, "asked": 0}
    evaluate, make, ask = expressions.Compiled.__call__, planner.Planner._plan, planner.Planner.plan

    def counted(name, fn):
        def run(*args):
            counts[name] += 1
            return fn(*args)

        return run

    expressions.Compiled.__call__ = counted("evaluated", evaluate)
    planner.Planner._plan = counted("made", make)
    planner.Planner.plan = counted("asked", ask)
    rows = []
    try:
        for directory in find_package_dirs(specs):
            counts.update(evaluated=0, made=0, asked=0)
            cpu, wall = time.process_time(), time.perf_counter()
            package = load_package(directory)
            generate(package)
            rows.append(
                (
                    package.name,
                    time.process_time() - cpu,
                    time.perf_counter() - wall,
                    counts["asked"],
                    counts["made"],
                    counts["evaluated"],
                )
            )
    finally:
        expressions.Compiled.__call__, planner.Planner._plan, planner.Planner.plan = evaluate, make, ask
    return rows


def print_bench() -> None:
    print(f"\nthe suite's own speed here: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before")
    print("| package | generate: CPU s | wall s | plans asked | plans made | expressions evaluated | plans/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = planning_bench()
    for name, cpu, wall, asked, made, evaluated in rows:
        print(f"| `{name}` | {cpu:.2f} | {wall:.2f} | {asked:,} | {made:,} | {evaluated:,} | {asked / cpu:,.0f} |")
    cpu, wall = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(
        f"| all {len(rows)} | {cpu:.2f} | {wall:.2f} | {sum(r[3] for r in rows):,} | {sum(r[4] for r in rows):,} | "
        f"{sum(r[5] for r in rows):,} | {sum(r[3] for r in rows) / cpu:,.0f} |"
    )
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cases", "--check"], cwd=ROOT, capture_output=True, text=True)
    print(f"python -m cases --check: {time.perf_counter() - start:.1f} s wall, exit {proc.returncode}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="store_true", help="also time the default run, serial and with -n 2")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each, back to back (default 1)")
    ap.add_argument("--webgpu", default="wgpu", help="the WebGPU implementation the timed runs use")
    ap.add_argument(
        "--bench",
        action="store_true",
        help="also the suite's own speed: planning per package (CPU "
        "time, plans, expressions evaluated) and python -m cases --check",
    )
    args = ap.parse_args(argv)
    counts = case_counts()
    print(case_table(counts))
    print(
        f"\n{sum(n for n, _ in counts.values()):,} cases in the default run, "
        f"{sum(h for _, h in counts.values()):,} more with --run-heavy"
    )
    if args.run:
        load = os.getloadavg()[0]
        print(f"\ntimed here: {os.cpu_count()} cores, load average {load:.1f} before the runs")
        for i in range(args.repeat):
            for extra in ([], ["-n", "2"]):
                elapsed, summary = timed_run([f"--webgpu={args.webgpu}", *extra])
                cases = sum(int(n) for n in re.findall(r"(\d+) (?:passed|failed|skipped)", summary))
                per_case = f", {1000 * elapsed / cases:.1f} ms per case" if cases else ""
                print(f"  run {i + 1} {' '.join(extra) or 'serial':<7} {elapsed:6.1f} s wall{per_case}  ({summary})")
    if args.bench:
        print_bench()
    return 0


if __name__ == "__main__":
    sys.exit(main())
