""" "Conforms" requires evidence (issue 28, classes 2, 3 and 5): a package, variant or dtype with no case that was
dispatched and value-checked is named in the report and never conforms; a manifest cannot declare its outputs
away; a waiver file cannot certify a variant none of whose cases passed a value check."""

from __future__ import annotations

import json

from tests.hostile.conftest import TEMPLATE, edit, run_conformance

GELU = "com.microsoft.Gelu"


def _manifest(specs, change) -> None:
    path = specs / GELU / "manifest.json"
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))


def _report(path):
    return json.loads(path.read_text())


def test_a_package_whose_every_case_is_replanned_into_a_rejection_checks_nothing(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})

    def only_scalar_needing_a_large_limit(raw):
        raw["variants"] = [v for v in raw["variants"] if v["id"] == "scalar"]
        raw["variants"][0]["when"].append("device.limits.maxComputeInvocationsPerWorkgroup >= 8192")

    _manifest(specs, only_scalar_needing_a_large_limit)
    report = tmp_path / "report.json"
    proc = run_conformance(specs, f"--conformance-report={report}")
    data = _report(report)
    assert data["totals"]["failed"] == 0 and data["totals"]["passed"] > 100  # every case "passed"...
    assert data["result"] == "nothing-checked" and not data["conforms"]  # ...but nothing was checked
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert [u["package"] for u in data["unchecked"]] == [GELU]
    assert any(
        n["variant"] == "scalar" and "maxComputeInvocationsPerWorkgroup" in n["why"] for n in data["not_runnable"]
    ), data["not_runnable"]
    assert "**nothing checked**" in report.with_suffix(".md").read_text()
    assert "result: nothing checked" in proc.stdout


def test_outputs_declared_empty_are_checked_against_the_reference(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})

    def declare_y_empty(raw):
        raw["outputs"][0]["shape"] = "(0,)"
        raw["outputs"][0]["rank"] = "1"
        for variant in raw["variants"]:
            variant["when"] = [w for w in variant["when"] if "shapes.Y" not in w]
            for p in variant["passes"]:
                p["dispatch"]["threads"] = "0"

    _manifest(specs, declare_y_empty)
    report = tmp_path / "report.json"
    proc = run_conformance(specs, "-k", "f32 and (X[8] or X[5]) and not reject", f"--conformance-report={report}")
    data = _report(report)
    accepted = [c for c in data["cases"] if c["variant"] != "rejected"]
    assert accepted and all(c["status"] == "failed" for c in accepted), [(c["id"], c["status"]) for c in accepted]
    assert all(
        "the manifest declares shape [0], the op's reference (com.microsoft.Gelu) gives [" in c["detail"]
        for c in accepted
    ), accepted[0]["detail"]
    assert proc.returncode == 1 and not data["conforms"]


def test_a_waiver_file_cannot_certify_a_variant_without_a_value_checked_pass(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    edit(
        specs / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count || params.count > 0u) { return; }\n",
    )  # computes nothing
    report = tmp_path / "report.json"
    select = ("-k", "Gelu/f32 and not reject")
    run_conformance(specs, *select, f"--conformance-report={report}")
    failed = [c["id"] for c in _report(report)["cases"] if c["status"] == "failed"]
    assert len(failed) > 10
    known = tmp_path / "known.yaml"
    known.write_text("".join(f"- id: {json.dumps(case_id)}\n  reason: waived\n" for case_id in failed))
    proc = run_conformance(specs, *select, f"--expectations={known}", f"--conformance-report={report}")
    data = _report(report)
    assert data["totals"]["xfailed"] == len(failed) and data["totals"]["failed"] == 0
    assert data["totals"]["passed"] > 0  # the empty outputs pass
    assert data["result"] == "nothing-checked" and proc.returncode == 1, data["result"]
    cells = {(u["variant"], u["dtype"]) for u in data["unchecked"]}
    assert {("scalar", "float32"), ("vec4", "float32")} <= cells, data["unchecked"]


def test_a_failing_kernel_is_reported_as_dispatched_and_failed_not_as_unchecked_setup(tmp_path, make_specs):
    """Issue 41, item 3: a package whose value-checked cases all failed says so (dispatched, value-checked,
    failed), which sends the user to the kernel, not to the device set-up."""
    specs = make_specs(**{GELU: GELU})
    edit(
        specs / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count || params.count > 0u) { return; }\n",
    )  # computes nothing
    report = tmp_path / "report.json"
    proc = run_conformance(specs, "-k", "Gelu/f32 and not reject", f"--conformance-report={report}")
    data = _report(report)
    failed = sum(c["status"] == "failed" for c in data["cases"])
    assert failed > 10 and proc.returncode == 1
    whole = next(u for u in data["unchecked"] if u["variant"] is None)
    assert f"{failed} dispatched and value-checked, failed" in whole["why"], whole["why"]
    assert "no case passed a value check on this device" in whole["why"]
    assert f"{failed} dispatched and value-checked, failed" in proc.stdout
