"""What the page server hands out for JavaScript loaders (the ``js-loader`` implementation): the loader modules
and @huggingface/jinja, which the page imports under the bare name ``@huggingface/jinja`` (its import map).

Registered with the page server when this module is imported: ``page_loader.mjs`` (beside it) as the page module
``loader``, the routes ``loaders/`` and ``jinja/``, and the import map's ``@huggingface/jinja``.

A loader is served from the directory that holds it, by a name: ``loaders/<name>/<path>`` (``reference`` is this
repository's ``loader/``; ``--impl js-loader:PATH.mjs`` adds PATH's directory). Only regular ``.js``/``.mjs``/
``.json`` files inside that directory, through no symlink, at most MAX_PACKAGE_FILE each.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from conformance.config import REPO_LOADER
from conformance.files import MAX_PACKAGE_FILE, read_confined
from conformance.gpu.backends.page_modules import RouteRefused, register

LOADERS: dict[str, Path] = {"reference": REPO_LOADER}
SUFFIXES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
}
#: The page's import map entries for a loader: its bare import of @huggingface/jinja, served under ``jinja/``.
IMPORTS = {"@huggingface/jinja": "./jinja/index.js"}
_NAMES = itertools.count(1)
JINJA = ("@huggingface", "jinja")


class LoaderFileError(RouteRefused):
    """A loader file that cannot be served (outside its directory, not a regular file, too large)."""


def serve_loader(module: Path) -> str:
    """Serves ``module``'s directory; returns the module's path on the server (``loaders/<name>/<file>``)."""
    module = Path(module).resolve()
    if not module.is_file() or module.suffix not in (".js", ".mjs"):
        raise LoaderFileError(f"--impl js-loader:{module}: not a JavaScript module file (.mjs or .js)")
    for name, root in LOADERS.items():
        if module.parent == root.resolve():
            return f"loaders/{name}/{module.name}"
    name = f"custom{next(_NAMES)}"
    LOADERS[name] = module.parent
    return f"loaders/{name}/{module.name}"


def jinja_dist() -> Path | None:
    """``node_modules/@huggingface/jinja/dist`` of the checkout (or of CONFORMANCE_JINJA_JS, a package directory)."""
    override = os.environ.get("CONFORMANCE_JINJA_JS", "").strip()
    here = Path(__file__).resolve()
    roots = [Path(override)] if override else [d.joinpath("node_modules", *JINJA) for d in (Path.cwd(), *here.parents)]
    return next((r / "dist" for r in roots if (r / "dist" / "index.js").is_file()), None)


def loader_file(parts: list[str]) -> tuple[bytes, str]:
    """(bytes, MIME type) of ``loaders/<name>/...`` or ``jinja/index.js``; LoaderFileError saying why not."""
    if parts == ["jinja", "index.js"]:
        dist = jinja_dist()
        if dist is None:
            raise LoaderFileError("no node_modules/@huggingface/jinja (run npm ci)")
        return read_confined(dist, dist / "index.js", 4 * MAX_PACKAGE_FILE, LoaderFileError), SUFFIXES[".js"]
    if len(parts) < 3 or parts[0] != "loaders" or parts[1] not in LOADERS:
        raise LoaderFileError(f"no such loader file {'/'.join(parts)!r}")
    root = LOADERS[parts[1]]
    suffix = Path(parts[-1]).suffix
    if suffix not in SUFFIXES or any(p in ("..", ".") for p in parts[2:]):
        raise LoaderFileError(f"refused: {'/'.join(parts[2:])!r} is not a .js, .mjs or .json file of the loader")
    return read_confined(root, root.joinpath(*parts[2:]), MAX_PACKAGE_FILE, LoaderFileError), SUFFIXES[suffix]


register(
    "loader",
    Path(__file__).with_name("page_loader.mjs"),
    routes={"loaders": loader_file, "jinja": loader_file},
    imports=IMPORTS,
)
