"""Bad input at the JavaScript loader's boundary is a clear error naming the role, the file or the version, and a
package whose files do not match its metadata.json is refused before anything is planned (Node, no GPU)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.certify.published import published_files
from conformance.config import REPO_LOADER
from conformance.engine.package import REPO_SPECS, load_package
from conformance.engine.profile import BASELINE
from conformance.tools.export import export_package

INDEX = REPO_LOADER / "src" / "index.js"
HERE = Path(__file__).resolve().parent


def b64(files):
    return {str(v): {n: base64.b64encode(data).decode() for n, data in named.items()} for v, named in files.items()}


def run_checks(tmp_path, index=INDEX) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.fail("the loader's boundary tests need Node")
    files = published_files(load_package("com.microsoft.Gelu"))
    template = next(n for n in files[1] if n.endswith(".jinja"))
    tampered = {
        "tampered-template": {1: {**files[1], template: files[1][template] + b"\n// one more line\n"}},
        "tampered-manifest": {1: {**files[1], "manifest.json": files[1]["manifest.json"].replace(b'"Gelu"', b'"Gelo"')}},
        "missing-template": {1: {k: v for k, v in files[1].items() if k != template}},
        "metadata-not-json": {1: {**files[1], "metadata.json": b"{"}},
    }
    request = {"versions": b64(files), "tampered": {k: b64(v) for k, v in tampered.items()},
               "limits": dict(BASELINE.limits), "features": sorted(BASELINE.features)}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    done = subprocess.run([node, str(HERE / "boundary.mjs"), index.resolve().as_uri(), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    return run_checks(tmp_path_factory.mktemp("boundary"))


def test_a_good_call_plans(checks):
    assert checks["plan"] == {"ok": True, "value": "vec4"}
    assert checks["newest"] == {"ok": True, "value": 2}, "without a version the newest published one is loaded"
    assert checks["f16-bits"] == {"ok": True, "value": "float16"}, "a Uint16Array is f16 bits"


@pytest.mark.parametrize("check, reason, words", [
    ("data-length", "data-length", "shape [2,4] has 8 elements but data has 7"),
    ("typed-array-kind", "dtype", "input 'X' has dtype int32; type T allows float32, float16"),
    ("not-a-typed-array", "data-type", "data is an Array of 4; expected Float32Array"),
    ("missing-input", "missing-input", "input 'X' is required by com.microsoft.Gelu but absent"),
    ("unknown-role", "unknown-argument", "has no input 'Z'; inputs are X"),
    ("bad-shape", "shape", "must be an array of non-negative integers"),
])
def test_bad_input_is_a_contract_error_naming_the_role(checks, check, reason, words):
    got = checks[check]
    assert got.get("name") == "ContractError", got
    assert got["reason"] == reason and words in got["message"], got
    assert got["argument"] == ("Z" if check == "unknown-role" else "X"), got


@pytest.mark.parametrize("check, words", [
    ("version-missing", "version 3 is not published (published: 1, 2): no metadata.json"),
    ("version-not-integer", 'version must be an integer from 1 to 1000, got "1"'),
    ("tampered-template", "does not match metadata.json's"),
    ("tampered-manifest", "does not match metadata.json's"),
    ("missing-template", "missing (metadata.json lists it)"),
    ("metadata-not-json", "not JSON"),
])
def test_a_package_that_is_not_the_published_one_is_refused(checks, check, words):
    got = checks[check]
    assert got.get("name") == "PackageError", got
    assert words in got["message"], got
    if check.startswith(("tampered", "missing")):
        name = "manifest.json" if check == "tampered-manifest" else "elementwise-bias-gelu.wgsl.jinja"
        assert got["file"] == f"version 1/{name}", got


def test_the_cards_lines_load_what_export_writes(tmp_path):
    """`export` writes metadata.json beside the manifest: the package directory is then the published layout,
    and getKernel(URL, {version}) loads version 1, 2 or (no version) the newest from it."""
    for name in ("com.microsoft.Gelu", "com.microsoft.Gelu@2"):
        shutil.copytree(REPO_SPECS / name, tmp_path / name)
        export_package(tmp_path / name)
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps(dict(BASELINE.limits)))
    done = subprocess.run([shutil.which("node"), str(HERE / "url_source.mjs"), INDEX.resolve().as_uri(),
                           (tmp_path / "com.microsoft.Gelu").as_uri(), str(limits)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["1"] == {"version": 1, "variant": "scalar"}
    assert got["2"] == {"version": 2, "variant": "vec4_tail"}
    assert got["undefined"] == got["2"]
