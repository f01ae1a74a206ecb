"""``export``: write a package's test.json (correctness cases) and bench.json (benchmark cases) beside its manifest."""

from __future__ import annotations

from pathlib import Path

from conformance.engine.package import find_package_dirs
from conformance.tools.export import MAX_ELEMENTS, METADATA_FILE, export_package
from conformance.tools.jsjinja import EngineUnavailable, open_engine


def _export(args) -> int:
    dirs = find_package_dirs(Path(args.package))
    if not dirs:
        print(f"error: no kernel package in {args.package} (manifest.json, or build/webgpu/manifest.json)")
        return 2
    if args.out and len(dirs) > 1:
        print("error: --out takes one package")
        return 2
    try:
        engine = open_engine()
    except EngineUnavailable as err:
        engine = None
        print(f"export: portable-subset check skipped ({err}); metadata.json says so")
    try:
        for directory in dirs:
            test, bench = export_package(directory, Path(args.out) if args.out else None,
                                         args.max_elements if args.max_elements is not None else MAX_ELEMENTS,
                                         engine)
            print(f"wrote {test} ({test.stat().st_size} bytes), {bench} and {test.parent / METADATA_FILE}")
    finally:
        if engine is not None:
            engine.close()
    return 0


def register(sub) -> None:
    p = sub.add_parser("export", help="write test.json, bench.json and metadata.json into a package directory "
                                         "(beside its manifest)")
    p.add_argument("package", help="a package directory (either layout), or a directory of packages")
    p.add_argument("--out", default=None, help="write here instead of beside the manifest")
    p.add_argument("--max-elements", type=int, default=None,
                   help="ship accepted cases with at most this many input elements (default 4096)")
    p.set_defaults(func=_export)
