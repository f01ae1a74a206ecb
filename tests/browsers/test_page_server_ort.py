"""The page server hands out ONNX Runtime Web's files (the pinned npm package's dist/) and the page runtime's ORT
commands, and nothing else under those paths: the routes ONNX Runtime Web registers with the page server when its
module is imported."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from conformance.gpu.backends.served import PageServer
from conformance.impls.onnxruntime.web import ort_dist  # registers ext/ort.mjs and ort/


@pytest.fixture(scope="module")
def server():
    s = PageServer()
    yield s
    s.close()


def get(url: str):
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def test_ort_web_bundles_and_webassembly_are_served_with_their_types(server):
    if ort_dist() is None:
        pytest.skip("node_modules/onnxruntime-web missing: run npm ci (scripts/setup.sh does)")
    status, ctype, body = get(server.url + "ort/ort.webgpu.min.mjs?instance=2")
    assert status == 200 and ctype.startswith("text/javascript")
    assert body == (ort_dist() / "ort.webgpu.min.mjs").read_bytes()
    status, ctype, _ = get(server.url + "ort/ort-wasm-simd-threaded.jsep.wasm")
    assert status == 200 and ctype == "application/wasm"
    status, ctype, body = get(server.url + "ext/ort.mjs")
    assert status == 200 and ctype.startswith("text/javascript") and b"export function commands" in body


@pytest.mark.parametrize(
    "path",
    [
        "ort/ort.min.mjs.map",
        "ort/package.json",
        "ort/..%2Fpackage.json",
        "ort/ort.node.min.js",
        "ext/other.mjs",
        "ext/ort",
    ],
)
def test_nothing_else_is_handed_out_under_ort_and_ext(server, path):
    status, _, body = get(server.url + path)
    assert status in (403, 404) and body.startswith(b"refused")


def test_a_file_of_dist_that_links_out_of_it_is_refused(server, tmp_path, monkeypatch):
    """The route ONNX Runtime Web registers hands out regular files inside its dist/ only."""
    (tmp_path / "victim.txt").write_text("precious\n")
    dist = tmp_path / "ortpkg" / "dist"
    dist.mkdir(parents=True)
    (dist / "ort.webgpu.min.mjs").write_text("// the package's own\n")
    (dist / "ort-wasm-simd-threaded.jsep.wasm").symlink_to(tmp_path / "victim.txt")
    monkeypatch.setenv("CONFORMANCE_ORT_WEB", str(dist.parent))
    assert get(server.url + "ort/ort.webgpu.min.mjs")[::2] == (200, b"// the package's own\n")
    status, _, body = get(server.url + "ort/ort-wasm-simd-threaded.jsep.wasm")
    assert status == 404 and b"precious" not in body and b"outside" in body, body


def test_without_the_token_nothing_is_served(server):
    status, _, _ = get(server.url.rsplit("/", 2)[0] + "/ort/ort.webgpu.min.mjs")
    assert status == 403
