"""Names are data, never configuration (issue 28, class 4): a variant or package name, or a stored case's marker,
never becomes one of pytest's (or this plugin's) own markers, and a name pytest cannot take as a marker is made
safe instead of crashing collection for every package."""

from __future__ import annotations

import json

import pytest

from cases.model import marker_name
from tests.hostile.conftest import TEMPLATE, edit, run_conformance

GELU = "com.microsoft.Gelu"


@pytest.mark.parametrize(
    "name, safe",
    [
        ("xfail", "k_xfail"),
        ("heavy", "k_heavy"),
        ("usefixtures", "k_usefixtures"),
        ("skip", "k_skip"),
        ("1x", "k_1x"),
        ("_x", "k__x"),
        ("k_x", "k_k_x"),
        ("not", "k_not"),
        ("a.b-c", "a_b_c"),
        ("vec4", "vec4"),
    ],
)
def test_derived_markers_never_take_a_reserved_name(name, safe):
    assert marker_name(name) == safe


def test_variants_named_like_pytest_markers_are_still_certified(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    path = specs / GELU / "manifest.json"
    raw = json.loads(path.read_text())
    ids = {"vec4": "heavy", "scalar": "xfail"}
    for variant in raw["variants"]:
        variant["id"] = ids[variant["id"]]
    raw["variants"].append({**json.loads(json.dumps(raw["variants"][1])), "id": "usefixtures", "priority": -1})
    path.write_text(json.dumps(raw))
    edit(
        specs / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count) { return; }\n{% if not vec4 %}  if (i + 1u == params.count) { return; }\n{% endif %}",
    )  # the "xfail" variant is broken
    report = tmp_path / "report.json"
    proc = run_conformance(specs, "-k", "f32 and (X[5] or X[8]) and not reject", f"--conformance-report={report}")
    assert "INTERNALERROR" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    data = json.loads(report.read_text())
    statuses = {c["id"]: c["status"] for c in data["cases"]}
    broken = {i: s for i, s in statuses.items() if i.endswith("/xfail")}
    heavy = {i: s for i, s in statuses.items() if i.endswith("/heavy")}
    assert broken and set(broken.values()) == {"failed"}, statuses  # not pytest's xfail
    assert heavy and set(heavy.values()) == {"passed"}, statuses  # not deselected as heavy
    assert data["result"] == "does-not-conform" and proc.returncode == 1
