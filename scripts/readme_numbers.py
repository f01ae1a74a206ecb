"""The numbers the README states, from the golden files and (with --run) from timed runs here.

    PYTHONPATH=. python3 scripts/readme_numbers.py                 # cases per package, from cases/*.yaml
    PYTHONPATH=. python3 scripts/readme_numbers.py --run           # and the default run, timed, serial and -n 2
    PYTHONPATH=. python3 scripts/readme_numbers.py --run --repeat 2 --webgpu dawn

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
    lines.append(f"| all {len(counts)} | {sum(n for n, _ in counts.values()):,} | "
                 f"{sum(h for _, h in counts.values()):,} |")
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="store_true", help="also time the default run, serial and with -n 2")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each, back to back (default 1)")
    ap.add_argument("--webgpu", default="wgpu", help="the WebGPU implementation the timed runs use")
    args = ap.parse_args(argv)
    counts = case_counts()
    print(case_table(counts))
    print(f"\n{sum(n for n, _ in counts.values()):,} cases in the default run, "
          f"{sum(h for _, h in counts.values()):,} more with --run-heavy")
    if args.run:
        load = os.getloadavg()[0]
        print(f"\ntimed here: {os.cpu_count()} cores, load average {load:.1f} before the runs")
        for i in range(args.repeat):
            for extra in ([], ["-n", "2"]):
                elapsed, summary = timed_run([f"--webgpu={args.webgpu}", *extra])
                print(f"  run {i + 1} {' '.join(extra) or 'serial':<7} {elapsed:6.1f} s wall  ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
