"""The page server knows no implementation under test by name: each that runs in the page registers, on import, its
page module, its static routes and its import-map entries (conformance.gpu.backends.page_modules; issue 52)."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conformance.errors import ConformanceError
from conformance.gpu.backends import page_modules
from conformance.gpu.backends.page_modules import RouteRefused, imports_generation, register
from conformance.gpu.backends.served import PageServer

BACKENDS = Path(page_modules.__file__).parent


@pytest.fixture
def registry():
    """The registry, restored in place after the test (the server reads the same dicts; the suite's own
    registrations stay)."""
    held = {name: dict(getattr(page_modules, name)) for name in ("EXTENSIONS", "ROUTES", "IMPORTS", "_REGISTERED")}
    changed = list(page_modules._imports_changed)
    yield page_modules
    for name, saved in held.items():
        getattr(page_modules, name).clear()
        getattr(page_modules, name).update(saved)
    page_modules._imports_changed[:] = changed


@pytest.fixture
def server():
    s = PageServer()
    yield s
    s.close()


def get(url: str):
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_the_generic_page_runtime_names_no_implementation():
    for name in (
        "served.py",
        "page_modules.py",
        "page.py",
        "chromium.py",
        "firefox.py",
        "page_runtime.js",
        "served_page.js",
    ):
        text = (BACKENDS / name).read_text()
        found = re.findall(r"page_ort|page_loader|loader_files|onnxruntime-web/|@huggingface|import.*impls", text)
        assert not found, f"{name} names {sorted(set(found))}"


def test_a_registered_page_module_its_routes_and_imports_are_served(registry, server, tmp_path):
    module = tmp_path / "page_demo.mjs"
    module.write_text("export function commands() { return {}; }\n")

    def route(parts):
        if parts == ["demo", "ok.js"]:
            return b"// ok\n", "text/javascript; charset=utf-8"
        if parts == ["demo", "refused.js"]:
            raise RouteRefused("not this one")
        return None

    before = imports_generation()
    register("demo", module, routes={"demo": route}, imports={"demo-lib": "./demo/ok.js"})
    assert imports_generation() == before + 1  # pages loaded before lack the new entry
    assert get(server.url + "ext/demo.mjs") == (200, module.read_bytes())
    assert get(server.url + "demo/ok.js") == (200, b"// ok\n")
    assert get(server.url + "demo/refused.js") == (404, b"refused: not this one\n")
    assert get(server.url + "demo/other.js") == (404, b"refused: no such path\n")
    status, page = get(server.url)
    assert status == 200 and b'"demo-lib": "./demo/ok.js"' in page  # the page made per request has it
    register("demo", module, routes={"demo": route}, imports={"demo-lib": "./demo/ok.js"})
    assert imports_generation() == before + 1  # the same again changes nothing


def test_a_route_or_import_another_module_holds_and_the_servers_own_paths_are_refused(registry, tmp_path):
    register("first", tmp_path / "a.mjs", routes={"shared": lambda parts: None}, imports={"lib": "./a.js"})
    with pytest.raises(ConformanceError, match="shared/ already taken"):
        register("second", tmp_path / "b.mjs", routes={"shared": lambda parts: None})
    with pytest.raises(ConformanceError, match="lib already taken"):
        register("second", tmp_path / "b.mjs", imports={"lib": "./b.js"})
    for own in ("blob", "ext", "driven", "hello", "poll"):
        with pytest.raises(ConformanceError, match=f"{own}/ already taken"):
            register("second", tmp_path / "b.mjs", routes={own: lambda parts: None})
    register("first", tmp_path / "a.mjs")  # registered again: its routes and imports are its new ones
    assert "shared" not in registry.ROUTES and "lib" not in registry.IMPORTS
