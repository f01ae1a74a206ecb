"""``lint``: schema, reachability, render/compile/bindings and shared-template checks of kernel packages."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from conformance.cli import add_webgpu
from conformance.config import default_backend
from conformance.engine.package import REPO_SPECS
from conformance.errors import DeviceError
from conformance.gpu.device import get_device
from conformance.tools.lint import Finding, lint


def _lint(args) -> int:
    start = time.perf_counter()
    device, findings = None, []
    if not args.no_compile:
        backend, adapter, webgpu = default_backend()
        try:
            device = get_device(args.device or backend, args.adapter or adapter, args.webgpu or webgpu)
        except DeviceError as err:
            findings.append(Finding("<device>", "", f"{err} (--no-compile renders and checks without compiling)"))
    notes: list[str] = []
    findings += lint(Path(args.dir), device, notes)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    for f in findings:
        print(f)
    where = f"{device.summary['adapter']} through {device.webgpu}" if device else "no device, not compiled"
    print(f"lint: {len(findings)} error(s) in {args.dir} ({where}, {time.perf_counter() - start:.1f}s)",
          file=sys.stderr)
    return 1 if findings else 0


def register(sub) -> None:
    p = sub.add_parser("lint", help="check kernel packages: schema, reachable variants, templates render and "
                                    "compile, bindings agree; one `path:json-pointer: message` line per error")
    p.add_argument("dir", nargs="?", default=str(REPO_SPECS), help="a package or a directory of packages "
                                                                   "(default: the repository's specs/)")
    p.add_argument("--device", default=None, help="backend to compile on (default: CONFORMANCE_DEVICE or auto)")
    p.add_argument("--adapter", default=None)
    add_webgpu(p, default=None)
    p.add_argument("--no-compile", action="store_true", help="render and check bindings, but open no device")
    p.set_defaults(func=_lint)
