"""``bench`` and ``plot``: kernel bandwidth against same-run copy baselines, WORKGROUP_SIZE tuning."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from conformance.cli import add_packages_and_device
from conformance.engine.package import find_package_dirs, load_package
from conformance.gpu.device import get_device
from conformance.gpu.kernel import Kernel
from conformance.tools import bench, proposal
from conformance.tools.peers import format_peers


def _bench(args) -> int:
    device = get_device(args.device, args.adapter, args.webgpu)
    dirs = find_package_dirs(Path(args.specs))
    if args.per_thread > 1 or args.proposal:
        if args.write_tuning:
            raise SystemExit("bench: --write-tuning would store tuning for variants that do not ship; "
                             "drop it or --proposal/--per-thread")
        scratch = Path(tempfile.mkdtemp(prefix="bench-proposal-"))
        if args.proposal:
            dirs = proposal.apply_all(dirs, Path(args.proposal), scratch)
        if args.per_thread > 1:
            dirs = [proposal.vec4_per_thread(d, args.per_thread, scratch) for d in dirs]
    kernels = [Kernel(load_package(d), device) for d in dirs]
    result = bench.run_bench(kernels, min_elements=args.min_elements, max_elements=args.max_elements,
                             reps=args.reps, sweep=args.sweep, write_tuning=args.write_tuning,
                             warmup_seconds=args.warmup_seconds, peers=args.peers,
                             out=Path(args.json) if args.json else None,
                             plot=Path(args.plot) if args.plot else None)
    print(bench.format_table(result))
    if "peers" in result:
        print(format_peers(result["peers"]))
    return 0


def _plot(args) -> int:
    result = json.loads(Path(args.json).read_text())
    bench.plot_rows(result["rows"], Path(args.png), result["device"].get("adapter", "device"))
    print(f"wrote {args.png}")
    return 0


def register(sub) -> None:
    b = sub.add_parser("bench", help="kernel bandwidth vs same-run copy baselines, and WORKGROUP_SIZE tuning")
    add_packages_and_device(b)
    b.add_argument("--min-elements", type=int, default=0, help="smallest size in elements")
    b.add_argument("--max-elements", type=int, default=1 << 20,
                   help="largest size in elements (default 1 Mi; 268435456 for the full 4 Ki..256 Mi range)")
    b.add_argument("--reps", type=int, default=20)
    b.add_argument("--warmup-seconds", type=float, default=1.0,
                   help="sustained load before each timing, so the GPU's clocks are up (default 1.0)")
    b.add_argument("--sweep", action="store_true", help="sweep WORKGROUP_SIZE 32..1024 at the largest size")
    b.add_argument("--write-tuning", nargs="?", const=True, default=False, metavar="DIR",
                   help="write the sweep's best values as this device's table, in DIR or else the user's cache "
                        "($XDG_CACHE_HOME/webgpu-kernel-conformance/tuning), where plain kernel calls find it")
    b.add_argument("--json", default=None, help="write the results as JSON here")
    b.add_argument("--plot", default=None, help="write a PNG plot here (needs matplotlib)")
    b.add_argument("--per-thread", type=int, default=1,
                   help="bench a proposed manifest change: vec4 variants handle N vec4 per invocation")
    b.add_argument("--proposal", default=None,
                   help="bench a proposed manifest change: a specs/proposals/*.json file of additions")
    b.add_argument("--peers", action="store_true",
                   help="also time PyTorch GELU (CUDA) and ONNX Runtime WebGPU FastGelu/Gelu in the same run")
    b.set_defaults(func=_bench)
    p = sub.add_parser("plot", help="plot a bench JSON file as PNG")
    p.add_argument("json")
    p.add_argument("png")
    p.set_defaults(func=_plot)
