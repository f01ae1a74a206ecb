"""``export``: write a package's test.json (correctness cases) and bench.json (benchmark cases) beside its manifest."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.cli.lazy import on_use

find_package_dirs = on_use("conformance.engine.package", "find_package_dirs")
export = on_use("conformance.tools.export")
jsjinja = on_use("conformance.tools.jsjinja")


def _export(args) -> int:
    dirs = find_package_dirs(Path(args.package))
    if not dirs:
        print(f"error: no kernel package in {args.package} (manifest.json, or build/webgpu/manifest.json)")
        return 2
    if args.out and len(dirs) > 1:
        print("error: --out takes one package")
        return 2
    try:
        engine = jsjinja.open_engine()
    except jsjinja.EngineUnavailable as err:
        engine = None
        print(f"export: portable-subset check skipped ({err}); metadata.json says so")
    try:
        for directory in dirs:
            test, bench = export.export_package(
                directory,
                Path(args.out) if args.out else None,
                args.max_elements if args.max_elements is not None else export.MAX_ELEMENTS,
                engine,
            )
            print(f"wrote {test} ({test.stat().st_size} bytes), {bench} and {test.parent / export.METADATA_FILE}")
            portable = json.loads((test.parent / export.METADATA_FILE).read_text(encoding="utf-8"))["portableSubset"]
            if engine is not None and not portable.get("checked"):  # a check that compared nothing says so here too
                print(f"export: {directory.name}: portable-subset check: not checked ({portable.get('reason')})")
    finally:
        if engine is not None:
            engine.close()
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "export", help="write test.json, bench.json and metadata.json into a package directory (beside its manifest)"
    )
    p.add_argument("package", help="a package directory (either layout), or a directory of packages")
    p.add_argument("--out", default=None, help="write here instead of beside the manifest")
    p.add_argument(
        "--max-elements",
        type=int,
        default=None,
        help="ship accepted cases with at most this many input elements (default 4096)",
    )
    p.set_defaults(func=_export)
