"""``merge`` takes reports from other machines: untrusted input (issue 40, items 3, 4 and 5).

A report is real (a Gelu whose kernel writes nothing, every selected case failing), then edited as a forger
would: its header claiming ``conforms``, markup in its counts, fields of the wrong type.
"""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import TEMPLATE, edit, run_cli, run_conformance

GELU = "com.microsoft.Gelu"
SCRIPT = "<script>document.title='pwned'</script>"


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("forged")
    shutil.copytree(REPO_SPECS / GELU, root / "specs" / GELU)
    edit(
        root / "specs" / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count || params.count > 0u) { return; }\n",
    )
    proc = run_conformance(root / "specs", "-k", "f32 and vec4", f"--conformance-report={root / 'real.json'}")
    data = json.loads((root / "real.json").read_text())
    assert data["result"] == "does-not-conform" and data["totals"]["failed"] == len(data["cases"]) > 5, proc.stdout[
        -2000:
    ]
    return data


def merge(tmp_path, data, *extra):
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(data))
    out = {k: tmp_path / f"matrix.{k}" for k in ("md", "json", "html")}
    proc = run_cli(
        "-P",
        "-m",
        "conformance",
        "merge",
        str(path),
        "--out",
        str(out["md"]),
        "--json",
        str(out["json"]),
        "--html",
        str(out["html"]),
        *extra,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    return proc, out


def claims_to_conform(data: dict) -> dict:
    forged = copy.deepcopy(data)
    forged.update(
        result="conforms",
        conforms=True,
        unchecked=[],
        totals={**data["totals"], "passed": len(data["cases"]), "failed": 0},
    )
    for cell in (c for variants in forged["summary"].values() for dts in variants.values() for c in dts.values()):
        cell["passed"], cell["failed"] = cell["failed"], 0
    return forged


def test_a_header_claiming_conformance_is_recomputed_from_the_cases(failing_report, tmp_path):
    proc, out = merge(tmp_path, claims_to_conform(failing_report))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "states 'conforms' but its cases give 'does-not-conform'" in proc.stdout, proc.stdout
    matrix = json.loads(out["json"].read_text())
    assert matrix["columns"][0]["result"] == "does not conform", matrix["columns"][0]
    assert {c["failed"] for row in matrix["rows"] for c in row["cells"]} != {0}
    assert matrix["columns"][0]["totals"]["failed"] == len(failing_report["cases"])
    markdown = out["md"].read_text()
    assert "does not conform" in markdown and " passed |" not in markdown, markdown[:2000]
    html = out["html"].read_text()
    assert 'class="result-does-not-conform"' in html and 'class="result-conforms"' not in html


def test_the_real_report_merges_as_it_is(failing_report, tmp_path):
    proc, out = merge(tmp_path, failing_report)
    assert proc.returncode == 0 and "states" not in proc.stdout, proc.stdout + proc.stderr
    assert json.loads(out["json"].read_text())["columns"][0]["result"] == "does not conform"


def test_markup_in_counts_never_reaches_the_pages_and_the_page_forbids_scripts(failing_report, tmp_path):
    forged = copy.deepcopy(failing_report)
    forged["totals"] = {SCRIPT: 1, "failed": SCRIPT}
    first = next(iter(next(iter(forged["summary"].values())).values()))
    next(iter(first.values()))["failed"] = SCRIPT
    proc, out = merge(tmp_path, forged)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for kind in ("md", "html"):
        assert "<script" not in out[kind].read_text().lower(), kind
    html = out["html"].read_text()
    assert "Content-Security-Policy" in html and "script-src 'none'" in html
    assert html.index("Content-Security-Policy") < html.index("<body>")


#: (where, the wrong value, what the error must name): each a report field merge reads, wrongly typed.
WRONG = [
    ("/cases", {"a": 1}, "/cases: expected a list of cases"),
    ("/cases/0", "passed", "/cases/0: expected an object"),
    ("/cases/0/status", 7, "/cases/0/status: expected a string"),
    ("/cases/0/status", "conforms", "/cases/0/status: expected one of passed"),
    ("/cases/0/id", ["x"], "/cases/0/id: expected a string"),
    ("/cases/0/detail", {"x": 1}, "/cases/0/detail: expected a string or null"),
    ("/cases/0/worst_ratio", "big", "/cases/0/worst_ratio: expected a finite number or null"),
    ("/device", "lavapipe", "/device: expected an object or null"),
    ("/device/adapter", {"name": 1}, "/device/adapter: expected a string or null"),
    ("/device/features", "shader-f16", "/device/features: expected a list or null"),
    ("/packages/0", "com.microsoft.Gelu", "/packages/0: expected an object"),
    ("/weak", {"a": 1}, "/weak: expected a list"),
    ("/compared_nothing", ["x"], "/compared_nothing/0: expected an object"),
    ("/interrupted", "no", "/interrupted: expected true or false or null"),
    ("/implementation", 3, "/implementation: expected a string or null"),
]


@pytest.mark.parametrize("pointer, value, named", WRONG, ids=[f"{p}={v!r}"[:40] for p, v, _ in WRONG])
def test_a_wrongly_typed_field_is_one_located_error(failing_report, tmp_path, pointer, value, named):
    forged = copy.deepcopy(failing_report)
    *parents, last = pointer.strip("/").split("/")
    node = forged
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(last) if isinstance(node, list) else last] = value
    proc, out = merge(tmp_path, forged)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"forged.json: {named}" in proc.stderr, proc.stderr
    assert not any(p.exists() for p in out.values())
