"""Which workgroup sizing the row ops' version 2 should derive: its sizing knobs, benched side by side.

Each configuration is a copy of LayerNormalization@2 and Softmax@2 with the manifest's sizing constants
replaced (spreadOne / spreadTwo: the total vec4 items (elements for scalar rows) up to which an invocation
holds 1, then 2, elements, else up to maxPerThread; groupThreads: the invocations a workgroup of short rows
aims at, rows per workgroup = groupThreads // rowThreads), plus version 1 as it ships. Every configuration is
benched on the model shapes (``bench --shapes models``) and on the size grid, as ``bench`` does, one JSON:

    python scripts/rowops_sweep.py OUT.json [--min-elements N] [--max-elements N] [--webgpu wgpu]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from conformance.engine.package import REPO_SPECS, load_package
from conformance.gpu.device import get_device
from conformance.gpu.kernel import Kernel
from conformance.tools import bench

CONFIGS = {  # name: constants replaced in the version-2 manifests (None: version 1 as it ships)
    "v1": None,
    "v2": {},
    "pt4": {"spreadOne": 0, "spreadTwo": 0},                 # v1's elements per invocation, v2's prefetch and rows
    "pt2": {"spreadOne": 0, "spreadTwo": 1 << 40},
    "pt1": {"spreadOne": 1 << 40, "spreadTwo": 1 << 40},
    "rows1": {"groupThreads": 1},                            # one row per workgroup
    "group256": {"groupThreads": 256},
}
OPS = ("com.microsoft.LayerNormalization", "com.microsoft.Softmax")


def packages(config, scratch: Path):
    if config is None:
        return [load_package(REPO_SPECS / op) for op in OPS]
    out = []
    for op in OPS:
        dst = scratch / f"{op}@2"
        shutil.copytree(REPO_SPECS / f"{op}@2", dst, dirs_exist_ok=True)
        manifest = json.loads((dst / "manifest.json").read_text())
        manifest["constants"].update(config)
        (dst / "manifest.json").write_text(json.dumps(manifest, indent=2))
        out.append(load_package(dst))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--min-elements", type=int, default=1 << 18)
    ap.add_argument("--max-elements", type=int, default=1 << 22)
    ap.add_argument("--webgpu", default="wgpu")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup-seconds", type=float, default=0.2)
    args = ap.parse_args()
    device = get_device("vulkan", None, args.webgpu)
    options = dict(reps=args.reps, sweep=False, write_tuning=False, out=None, plot=None,
                   warmup_seconds=args.warmup_seconds, cuda_copy=False)
    result = {"device": device.summary, "webgpu": args.webgpu, "configs": {}, "rows": []}
    for name in args.configs.split(","):
        config = CONFIGS[name]
        with tempfile.TemporaryDirectory() as scratch:
            kernels = [Kernel(p, device) for p in packages(config, Path(scratch))]
            for shapes in ("models", None):
                run = bench.run_bench(kernels, min_elements=args.min_elements, max_elements=args.max_elements,
                                      shapes=shapes, **options)
                result["rows"] += [r | {"config": name} for r in run["rows"]]
        result["configs"][name] = config
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(f"{name}: done, {len(result['rows'])} rows", flush=True)
    for r in result["rows"]:
        print(f"{r['config']:<9}{r['package'][14:]:<20}{r['variant']:<18}{r['dtype']:<8}{str(r['shape']):<20}"
              f"{r['workgroup_size']:>5}{r['best_copy_ratio']:>7.3f}")


if __name__ == "__main__":
    main()
