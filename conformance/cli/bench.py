"""``bench`` and ``plot``: kernel bandwidth against same-run copy baselines, WORKGROUP_SIZE tuning."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from conformance.cli.lazy import on_use
from conformance.config import BACKENDS, REPO_SPECS, WEBGPU
from conformance.errors import ConformanceError

find_package_dirs = on_use("conformance.engine.package", "find_package_dirs")
load_package = on_use("conformance.engine.package", "load_package")
get_device = on_use("conformance.gpu.device", "get_device")
Kernel = on_use("conformance.gpu.kernel", "Kernel")
bench = on_use("conformance.tools.bench")
proposal = on_use("conformance.tools.proposal")
format_peers = on_use("conformance.tools.peers", "format_peers")
shapes = on_use("conformance.tools.shapes")


def webgpu_list(text: str) -> list[str]:
    """``--webgpu``: one implementation, a comma-separated list, or ``all`` (every one, in WEBGPU's order)."""
    names = list(WEBGPU) if text == "all" else [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in WEBGPU]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected all, or one or more of {', '.join(WEBGPU)} separated by commas"
        )
    return list(dict.fromkeys(names))


def _selected(dirs: list[Path], packages: str | None) -> list[Path]:
    """The package directories ``--packages`` names (op names, op ids or op ids with @N; commas), all without it."""
    if not packages:
        return dirs
    wanted = {p.strip() for p in packages.split(",") if p.strip()}
    picked = []
    for d in dirs:
        m = load_package(d).manifest
        if wanted & {m.name, m.op_id, m.package_id, m.case_prefix}:
            picked.append(d)
    if not picked:
        raise SystemExit(f"bench: --packages {packages}: names none of the packages in the specs")
    return picked


def _bench(args) -> int:
    if args.plot:
        bench.pyplot()  # before the run, not after it
    dirs = _selected(find_package_dirs(Path(args.specs)), args.packages)
    if args.per_thread > 1 or args.proposal:
        if args.write_tuning:
            raise SystemExit(
                "bench: --write-tuning would store tuning for variants that do not ship; "
                "drop it or --proposal/--per-thread"
            )
        scratch = Path(tempfile.mkdtemp(prefix="bench-proposal-"))
        if args.proposal:
            dirs = proposal.apply_all(dirs, Path(args.proposal), scratch)
        if args.per_thread > 1:
            dirs = [proposal.vec4_per_thread(d, args.per_thread, scratch) for d in dirs]
    packages = [load_package(d) for d in dirs]
    options = dict(
        min_elements=args.min_elements,
        max_elements=args.max_elements,
        reps=args.reps,
        sweep=args.sweep,
        write_tuning=args.write_tuning,
        warmup_seconds=args.warmup_seconds,
        peers=args.peers,
        cuda_copy=not args.no_cuda_copy,
        max_calls=args.max_calls,
        shapes=_shapes(args),
    )
    out, plot = Path(args.json) if args.json else None, Path(args.plot) if args.plot else None
    if len(args.webgpu) == 1:
        device = get_device(args.device, args.adapter, args.webgpu[0])
        result = bench.run_bench([Kernel(p, device) for p in packages], out=out, plot=plot, **options)
    else:

        def open_kernels(webgpu):
            device = get_device(args.device, args.adapter, webgpu)
            return [Kernel(p, device) for p in packages]

        result = bench.run_implementations(args.webgpu, open_kernels, out=out, plot=plot, **options)
    print(bench.format_table(result))
    for run in result.get("runs") or [result]:
        if "peers" in run:
            print(format_peers(run["peers"]))
    return 0


def _shapes(args):
    """``--shapes models`` or ``--shape`` (repeatable), or None for the size grid."""
    if args.shapes and args.shape:
        raise SystemExit("bench: --shapes and --shape: give one of them")
    if (args.shapes or args.shape) and args.sweep:
        raise SystemExit("bench: --sweep tunes at the size grid's largest size; drop --shapes/--shape or --sweep")
    if args.shapes:
        return args.shapes
    if args.shape:
        return [shapes.BenchShape(s, (f"--shape {','.join(map(str, s))}",)) for s in args.shape]
    return None


def shape_argument(text: str) -> tuple[int, ...]:
    try:
        return shapes.parse_shape(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _plot(args) -> int:
    bench.pyplot()  # before reading anything: without matplotlib, one line saying what to install
    try:
        result = json.loads(Path(args.json).read_text())
        rows, adapter = result["rows"], result["device"].get("adapter", "device")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConformanceError(f"{args.json}: not a bench JSON file (bench --json writes one): {exc}") from None
    bench.plot_rows(rows, Path(args.png), adapter)
    print(f"wrote {args.png}")
    return 0


def register(sub) -> None:
    b = sub.add_parser("bench", help="kernel bandwidth vs same-run copy baselines, and WORKGROUP_SIZE tuning")
    b.add_argument("--specs", default=str(REPO_SPECS))
    b.add_argument("--device", default="auto", choices=sorted(BACKENDS))
    b.add_argument("--adapter", default=None)
    b.add_argument(
        "--webgpu",
        type=webgpu_list,
        default=["wgpu"],
        help="WebGPU implementation(s): wgpu (wgpu-native, naga), dawn (Dawn, Tint), chromium, a comma-"
        "separated list (wgpu,dawn: side by side in one run and one JSON) or all",
    )
    b.add_argument(
        "--packages",
        default=None,
        help="only these packages (op names such as Gelu, op ids, or op id@N; commas); default every one",
    )
    b.add_argument(
        "--max-calls",
        type=int,
        default=None,
        metavar="N",
        help="time only the first N calls of each implementation's fixed list (the JSON says what was left "
        "out; a count, so the same calls are benched on every machine)",
    )
    b.add_argument(
        "--no-cuda-copy", action="store_true", help="leave the CUDA device-to-device copy (torch) out of best_copy"
    )
    b.add_argument("--min-elements", type=int, default=0, help="smallest size in elements")
    b.add_argument(
        "--max-elements",
        type=int,
        default=1 << 20,
        help="largest size in elements (default 1 Mi; 268435456 for the full 4 Ki..256 Mi range)",
    )
    b.add_argument(
        "--shapes",
        choices=["models"],
        default=None,
        help="instead of the size grid, each op's activation shapes in public model configurations "
        "(BERT-base, GPT-2, GPT-2 medium, a 7B decoder; sequence 128 and 512)",
    )
    b.add_argument(
        "--shape",
        type=shape_argument,
        action="append",
        default=None,
        metavar="D0,D1,...",
        help="instead of the size grid, this primary input shape for every package (repeatable)",
    )
    b.add_argument("--reps", type=int, default=20)
    b.add_argument(
        "--warmup-seconds",
        type=float,
        default=1.0,
        help="sustained load before each timing, so the GPU's clocks are up (default 1.0)",
    )
    b.add_argument("--sweep", action="store_true", help="sweep WORKGROUP_SIZE 32..1024 at the largest size")
    b.add_argument(
        "--write-tuning",
        nargs="?",
        const=True,
        default=False,
        metavar="DIR",
        help="write the sweep's best values as this device's table, in DIR or else the user's cache "
        "($XDG_CACHE_HOME/webgpu-kernel-conformance/tuning), where plain kernel calls find it",
    )
    b.add_argument("--json", default=None, help="write the results as JSON here")
    b.add_argument("--plot", default=None, help="write a PNG plot here (needs matplotlib)")
    b.add_argument(
        "--per-thread",
        type=int,
        default=1,
        help="bench a proposed manifest change: vec4 variants handle N vec4 per invocation",
    )
    b.add_argument(
        "--proposal", default=None, help="bench a proposed manifest change: a specs/proposals/*.json file of additions"
    )
    b.add_argument(
        "--peers",
        action="store_true",
        help="also time PyTorch GELU (CUDA) and ONNX Runtime WebGPU FastGelu/Gelu in the same run",
    )
    b.set_defaults(func=_bench)
    p = sub.add_parser("plot", help="plot a bench JSON file as PNG")
    p.add_argument("json")
    p.add_argument("png")
    p.set_defaults(func=_plot)
