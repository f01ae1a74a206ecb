"""What the implementations that run in a page register with the page server: their page modules, the static
routes they need and the page's import map.

The page server (``served.py``) and the launchers know no implementation under test by name. One that runs in the
page (``conformance.impls``: ONNX Runtime Web, a JavaScript loader) calls :func:`register` when its module is
imported: its page module (served as ``ext/<name>.mjs``; the page runtime adds its ``commands()`` to its own on
``["extend", 0, name]``), its static routes (a first path segment and a function answering a path under it: ORT
Web's ``dist/``, a loader's files) and the bare module names its page imports (the page's import map). A run
imports the implementation before it opens a page; a page loaded before the import map changed lacks an entry,
and its backend replaces it where it can (:func:`imports_generation`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from conformance.errors import ConformanceError

MIME = {"mjs": "text/javascript; charset=utf-8", "wasm": "application/wasm"}
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")

#: A static route's answer to a path (its segments, the first one the route's): (body, MIME type), or None when
#: the route has no such path (refused as any unknown path is); :class:`RouteRefused` to refuse it saying why.
Route = Callable[[list], "tuple[bytes, str] | None"]
#: Page modules the page runtime may load on top of its WebGPU commands (``["extend", 0, name]``): name -> file.
EXTENSIONS: dict[str, Path] = {}
#: Static routes: first path segment -> :data:`Route`.
ROUTES: dict[str, Route] = {}
#: The page's import map: bare module name -> URL relative to the page.
IMPORTS: dict[str, str] = {}
#: First path segments the server answers itself: no registration takes them.
OWN_PATHS = frozenset({"driven", "ext", "blob", "hello", "poll"})
#: What each page module registered (name -> its routes' segments and its imports), so that a second
#: registration of the same module (a reload) replaces its own and never takes another's.
_REGISTERED: dict[str, tuple[frozenset, frozenset]] = {}
_imports_changed = [0]  # how often IMPORTS changed: a page loaded before the last change lacks some of them


class RouteRefused(ConformanceError):
    """A registered route refuses a path it owns (a file missing, outside its folder, too large): sent as a 404
    saying why."""


def register(
    name: str, module: Path, *, routes: dict[str, Route] | None = None, imports: dict[str, str] | None = None
) -> None:
    """Offer an implementation's page module as ``ext/<name>.mjs`` (its ``commands()`` added to the page runtime's
    on ``["extend", 0, name]``), its static ``routes`` (first path segment -> :data:`Route`) and the bare module
    names its page imports (``imports``: name -> URL relative to the page, the page's import map). Called when the
    implementation's module is imported, which a run does before it opens a page; a page loaded before a change of
    the import map (:func:`imports_generation`) is replaced by its backend where it can be (a launched browser).
    Registering a name again replaces what it registered before; a route or an import another page module holds
    is refused."""
    routes, imports = dict(routes or {}), dict(imports or {})
    others = [held for other, held in _REGISTERED.items() if other != name]
    taken = [f"{seg}/" for seg in routes if seg in OWN_PATHS or any(seg in segs for segs, _ in others)]
    taken += [spec for spec in imports if any(spec in specs for _, specs in others)]
    if not NAME.match(name) or taken:
        raise ConformanceError(
            f"page module {name!r} ({module}) cannot be registered: "
            + (f"{', '.join(taken)} already taken" if taken else "a name is 1-64 letters, digits, - or _")
        )
    before = dict(IMPORTS)
    old_routes, old_imports = _REGISTERED.get(name, ((), ()))
    for seg in old_routes:
        ROUTES.pop(seg, None)
    for spec in old_imports:
        IMPORTS.pop(spec, None)
    EXTENSIONS[name] = Path(module)
    ROUTES.update(routes)
    IMPORTS.update(imports)
    _REGISTERED[name] = (frozenset(routes), frozenset(imports))
    if IMPORTS != before:
        _imports_changed[0] += 1


def imports_generation() -> int:
    """Which import map a page loaded now gets (a count of its changes): a page whose generation is older lacks
    a module some implementation's page imports."""
    return _imports_changed[0]
