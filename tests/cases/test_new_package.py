"""A package the generator has never seen gets cases and coverage with no code change."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

import cases
from conformance.engine.package import load_package

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Gelu renamed, with a higher-priority vec8 variant gated by a new predicate on the last dim."""
    specs = tmp_path_factory.mktemp("specs")
    target = specs / "com.example.WideGelu"
    shutil.copytree(ROOT / "specs" / "com.microsoft.Gelu", target)
    raw = json.loads((target / "manifest.json").read_text())
    raw["domain"], raw["name"] = "com.example", "WideGelu"
    vec4 = next(v for v in raw["variants"] if v["id"] == "vec4")
    vec8 = json.loads(json.dumps(vec4))
    vec8.update(id="vec8", priority=30)
    vec8["when"] = vec4["when"] + ["dim(shapes.X, ranks.X - 1) % 8 == 0", "ranks.X <= 3"]
    raw["variants"].append(vec8)
    (target / "manifest.json").write_text(json.dumps(raw, indent=2))
    return specs, load_package(target)


def test_synthetic_package_gets_cases(synthetic):
    _, package = synthetic
    generated = cases.generate(package)
    assert generated and all(c.id.startswith("WideGelu/") for c in generated)
    variants = {c.expect.get("variant") for c in generated}
    assert {"vec8", "vec4", "scalar"} <= variants
    # the new predicate's boundaries: rank 3 takes vec8, rank 4 does not
    assert any(c.expect.get("variant") == "vec8" and len(c.inputs["X"][0]) == 3 for c in generated)
    assert any(
        c.expect.get("variant") == "vec4" and len(c.inputs["X"][0]) == 4 and c.inputs["X"][0][-1] % 8 == 0
        for c in generated
    )


def test_synthetic_package_fully_covered(synthetic):
    _, package = synthetic
    report = cases.coverage(package)
    assert report.complete, report.report()
    assert {c.condition for c in report.covered} >= {"dim(shapes.X, ranks.X - 1) % 8 == 0", "ranks.X <= 3"}


def test_cli_writes_goldens_for_other_specs(synthetic, tmp_path):
    specs, _ = synthetic
    result = subprocess.run(
        [sys.executable, "-m", "cases", "--specs", str(specs), "--out", str(tmp_path), "--without-record"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    written = tmp_path / "com.example.WideGelu.yaml"
    assert cases.load_golden(written) == cases.generate(synthetic[1])
    check = subprocess.run(
        [sys.executable, "-m", "cases", "--check", "--specs", str(specs), "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
