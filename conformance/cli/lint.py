"""``lint``: schema, reachability, render/compile/bindings and shared-template checks of kernel packages."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from conformance.cli import add_webgpu, batch_collections
from conformance.cli.lazy import on_use
from conformance.config import REPO_SPECS, default_backend
from conformance.errors import DeviceError

get_device = on_use("conformance.gpu.device", "get_device")
lint_compile = on_use("conformance.tools.lint_compile")
Finding = on_use("conformance.tools.lint", "Finding")
lint = on_use("conformance.tools.lint", "lint")
jsjinja = on_use("conformance.tools.jsjinja")


def _lint(args) -> int:
    start = time.perf_counter()
    findings, opened = [], []

    def open_compiler():
        """What compiles on the device (None: it cannot open), opened once the cases are generated."""
        backend, adapter, webgpu = default_backend()
        try:
            opened.append(get_device(args.device or backend, args.adapter or adapter, args.webgpu or webgpu))
            return device_compiler(opened[0])
        except DeviceError as err:
            findings.append(Finding("<device>", "", f"{err} (--no-compile renders and checks without compiling)"))
            return None

    engine, compared, js = None, {}, "JS check off (--no-js)"
    if not args.no_js:
        try:
            engine = jsjinja.open_engine()
            js = f"checked against {engine.label}"
        except jsjinja.EngineUnavailable as err:
            js = f"portable-subset check skipped: {err}"
            if args.require_js:
                findings.append(Finding("<node>", "", f"{err}: the portable-subset check cannot run (--require-js)"))
            else:
                print(f"lint: {js}", file=sys.stderr)
    notes: list[str] = []
    try:
        with batch_collections():
            # compiling loads conformance.gpu and its WebGPU package here, before any package is checked, so that
            # a missing one is said at once; --no-compile loads neither
            device_compiler = None if args.no_compile else lint_compile.DeviceCompiler
            findings += lint(Path(args.dir), None if args.no_compile else open_compiler, engine, compared, notes)
    finally:
        if engine is not None:
            engine.close()
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    for f in findings:
        print(f)
    for name, stats in compared.items():
        print(
            f"lint: {name}: {stats.contexts} template contexts and {stats.expressions} expression evaluations "
            f"compared with {engine.label}",
            file=sys.stderr,
        )
    device = opened[0] if opened else None
    where = f"{device.summary['adapter']} through {device.webgpu}" if device else "no device, not compiled"
    print(
        f"lint: {len(findings)} error(s) in {args.dir} ({where}; {js}; {time.perf_counter() - start:.1f}s)",
        file=sys.stderr,
    )
    return 1 if findings else 0


def register(sub) -> None:
    p = sub.add_parser(
        "lint",
        help="check kernel packages: schema, reachable variants, templates render and "
        "compile, bindings agree; one `path:json-pointer: message` line per error",
    )
    p.add_argument(
        "dir",
        nargs="?",
        default=str(REPO_SPECS),
        help="a package or a directory of packages (default: the repository's specs/)",
    )
    p.add_argument("--device", default=None, help="backend to compile on (default: CONFORMANCE_DEVICE or auto)")
    p.add_argument("--adapter", default=None)
    add_webgpu(p, default=None)
    p.add_argument("--no-compile", action="store_true", help="render and check bindings, but open no device")
    p.add_argument(
        "--no-js",
        action="store_true",
        help="skip the portable-subset check (templates and expressions against @huggingface/jinja in Node)",
    )
    p.add_argument(
        "--require-js",
        action="store_true",
        help="an error, not a skip, when Node or @huggingface/jinja is missing (CI)",
    )
    p.set_defaults(func=_lint)
