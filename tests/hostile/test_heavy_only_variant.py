"""A variant only heavy calls select is judged (issue 51, item 2): without ``--run-heavy`` its cases with data are
left out, and the run names the cell "heavy only" instead of certifying the package on its empty-tensor passes."""

from __future__ import annotations

import json

import yaml

from conformance.certify.evidence import assess, left_out_entry
from conformance.tools.serve import load_packages
from tests.hostile.conftest import TEMPLATE, edit, run_cli

GELU = "com.microsoft.Gelu"
#: Selected for empty tensors and for inputs over 64 MiB; its shader writes zeros.
BIG = {
    "id": "big",
    "priority": 30,
    "when": [
        "numel(shapes.X) == numel(shapes.Y)",
        "f16Ok(dtypes.T)",
        "numel(shapes.X) == 0 or numel(shapes.X) * dtypeBytes(dtypes.T) > 67108864",
    ],
    "constants": {"vec4": False, "zeros": True},
}
ZEROS = (
    "{% else %}\n  if (i >= params.count) { return; }\n",
    "{% else %}\n  if (i >= params.count) { return; }\n"
    "{% if zeros is defined %}\n  y[i] = {{ scalar }}(0.0);\n  return;\n{% endif %}\n",
)


def plant_big(specs):
    manifest = json.loads((specs / GELU / "manifest.json").read_text())
    scalar = next(v for v in manifest["variants"] if v["id"] == "scalar")
    manifest["variants"].append({**scalar, **BIG, "passes": [{**scalar["passes"][0], "name": "Gelu.big"}]})
    (specs / GELU / "manifest.json").write_text(json.dumps(manifest, indent=2))
    edit(specs / GELU / TEMPLATE, *ZEROS)


def test_a_variant_only_heavy_cases_reach_keeps_the_package_from_conforming(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    plant_big(specs)
    golden = tmp_path / "golden"
    made = run_cli("-P", "-m", "cases", "--specs", str(specs), "--out", str(golden), timeout=600)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    cases = [
        c for c in yaml.safe_load((golden / f"{GELU}.yaml").read_text())["cases"] if c["expect"].get("variant") == "big"
    ]
    assert cases and {c["heavy"] for c in cases if 0 not in c["inputs"]["X"]["shape"]} == {True}
    report = tmp_path / "report.json"
    proc = run_cli(
        "-P",
        "-m",
        "conformance",
        "certify",
        "--specs",
        str(specs / GELU),
        "--device",
        "vulkan",
        "--golden",
        str(golden),
        "--report",
        str(report),
        "-n",
        "2",
        timeout=600,
    )
    data = json.loads(report.read_text())
    assert proc.returncode == 1 and data["result"] == "does-not-conform", proc.stdout[-3000:]
    big = [u for u in data["unchecked"] if u["variant"] == "big"]
    assert {u["dtype"] for u in big} >= {"float32"} and all(u["why"].startswith("heavy only: ") for u in big), big
    assert "run with --run-heavy" in big[0]["why"] and data["deselected_heavy"] == len(data["left_out"]) > 0
    assert "big" in proc.stdout and "heavy only" in proc.stdout


def _verdict(variant, status="passed", evidence="values", empty=False, dtype="float32"):
    return {
        "id": f"c/{variant}/{dtype}/{empty}",
        "package": "p",
        "variant": variant,
        "expected_variant": variant,
        "dtype": dtype,
        "status": status,
        "evidence": evidence,
        "empty": empty,
    }


def test_empty_passes_check_a_cell_only_when_nothing_heavy_was_left_out():
    empty_pass = _verdict("big", evidence="shapes", empty=True)
    values = [_verdict("scalar")]
    assert not assess(values + [empty_pass])["unchecked"]
    held = [left_out_entry(_verdict("big", status="not-run"))]
    unchecked = assess(values + [empty_pass], held)["unchecked"]
    assert [(u["variant"], u["cases"]) for u in unchecked] == [("big", 2)] and "heavy only" in unchecked[0]["why"]
    alone = assess(values, held)["unchecked"]  # no case of the cell ran at all: still named
    assert [u["variant"] for u in alone] == ["big"]
    assert not assess(values + [_verdict("big")], held)["unchecked"]  # a value-checked case of it ran


def test_serve_names_the_heavy_cases_it_leaves_out(make_specs):
    """The served page's column leaves heavy cases out as the pytest run does, and its report now says so."""
    specs = make_specs(**{GELU: GELU})
    [(package, run, left_out)] = load_packages(specs)
    assert left_out and all(c.heavy for c in left_out) and not any(c.heavy for c in run)
    [(_, everything, none)] = load_packages(specs, run_heavy=True)
    assert none == [] and len(everything) == len(run) + len(left_out)


def _report(tmp_path, left_out):
    from conformance.certify import report

    data = report.build(
        [_verdict("scalar"), _verdict("big", evidence="shapes", empty=True)],
        identity=[],
        device=None,
        implementation="manifest-runtime",
        skipped_reasons={},
        deselected_heavy=len(left_out),
        left_out=left_out,
    )
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return data, path


def test_merge_judges_the_heavy_cases_a_report_left_out(tmp_path):
    data, path = _report(tmp_path, [left_out_entry(_verdict("big", status="not-run"))])
    assert data["result"] == "does-not-conform"
    proc = run_cli("-P", "-m", "conformance", "merge", str(path), "--json", str(tmp_path / "m.json"))
    matrix = json.loads((tmp_path / "m.json").read_text())
    assert [c["result"] for c in matrix["columns"]] == ["does not conform"], proc.stdout + proc.stderr


def test_a_malformed_left_out_entry_is_a_located_error(tmp_path):
    _, path = _report(tmp_path, [])
    data = json.loads(path.read_text())
    data["left_out"] = [{"id": "x", "package": 3, "dtype": "float32"}]
    path.write_text(json.dumps(data))
    proc = run_cli("-P", "-m", "conformance", "merge", str(path), "--json", str(tmp_path / "m.json"))
    assert proc.returncode == 2 and "r.json: /left_out/0/package: expected a string" in proc.stderr, proc.stderr
