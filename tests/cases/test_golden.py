"""Golden files: round trip, bit-exact data, `--check` passing on the committed files and failing on a change."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cases
from cases import golden
from cases.data import make_inputs

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "cases", *args], cwd=ROOT, capture_output=True, text=True)


def test_golden_matches_generation(package, generated):
    loaded = cases.load_golden(cases.golden_path(ROOT / "cases", package.name))
    assert loaded == generated
    assert cases.to_yaml(loaded) == cases.to_yaml(generated)


def test_data_regenerated_bit_exactly(generated):
    for case in [c for c in generated if not c.heavy][::7] + [c for c in generated if c.family.startswith("values")]:
        first, second = make_inputs(case), make_inputs(case)
        for role, arg in case.inputs.items():
            if arg is None:
                assert first[role] is None
                continue
            assert first[role].shape == tuple(arg[0]) and first[role].dtype == np.dtype(arg[1])
            assert first[role].tobytes() == second[role].tobytes()


def test_special_values_land_in_the_data(generated):
    special = next(c for c in generated if c.family == "values-special")
    x = next(iter(make_inputs(special).values())).ravel()
    assert np.signbit(x[2]) and x[2] == 0  # -0.0 sits at the second even slot
    assert np.isfinite(x).all() and np.abs(x).max() == np.finfo(x.dtype).max
    nonfinite = next(c for c in generated if c.family == "values-nonfinite")
    y = next(iter(make_inputs(nonfinite).values())).ravel()
    assert np.isnan(y).any() and np.isposinf(y).any() and np.isneginf(y).any()


def test_seeds_differ_between_cases(generated):
    seeds = [c.data.seed for c in generated]
    assert len(set(seeds)) == len(seeds)


def test_check_passes_on_committed_goldens():
    result = run_cli("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_fails_with_a_diff_on_a_changed_manifest(tmp_path):
    specs = tmp_path / "specs"  # the one package changed: the others' files are checked by the test above
    shutil.copytree(ROOT / "specs" / "com.microsoft.FastGelu", specs / "com.microsoft.FastGelu")
    path = specs / "com.microsoft.FastGelu" / "manifest.json"
    raw = json.loads(path.read_text())
    raw["tunables"]["WORKGROUP_SIZE"] = 128
    path.write_text(json.dumps(raw, indent=2))
    result = run_cli("--check", "--specs", str(specs))
    assert result.returncode == 1
    assert "out of date" in result.stdout and "@@" in result.stdout
    assert "-    - {name: FastGelu.vec4Bias, threads: 2, workgroupSize: 256" in result.stdout
    assert "+    - {name: FastGelu.vec4Bias, threads: 2, workgroupSize: 128" in result.stdout


#: Planner evaluations (plans and scopes) that generating one package may take: counted, not timed, so that the
#: verdict is the same on a fast, slow or busy machine. The largest shipped package takes about 8,000 (the row ops,
#: each version); the candidate pool is linear in the inputs' companion shapes (tests/ops/test_third_party_op.py
#: checks a five-input op), so a new input costs a few thousand evaluations, not a combinatorial blow-up. What they
#: cost in seconds is in ``python -m cases``' own output.
GENERATION_EVALUATIONS = 20_000


def test_generation_of_each_package_is_bounded_in_planner_work(package, generation):
    evaluations = generation[1]  # counted while the session's one generation of the package ran (conftest.py)
    assert 0 < evaluations < GENERATION_EVALUATIONS, (package.name, evaluations)


def test_compare_parses_no_file_that_holds_the_written_text(tmp_path, generated, monkeypatch):
    path, text = tmp_path / "golden.yaml", cases.to_yaml(generated)
    path.write_text(text, encoding="utf-8")
    parsed = []
    real = golden.read_golden
    monkeypatch.setattr(golden, "read_golden", lambda p: parsed.append(p) or real(p))
    assert not golden.compare(path, generated, text).differs and not parsed
    assert not golden.compare(path, generated).differs and parsed  # no text given: parsed as before
    path.write_text(text + "# edited\n", encoding="utf-8")
    assert not golden.compare(path, generated, text).differs and len(parsed) == 2


def test_compare_refuses_a_call_listed_twice_with_or_without_the_text(tmp_path, generated):
    twice = generated + [dataclasses.replace(generated[0], id=generated[0].id + "#again")]
    path, text = tmp_path / "golden.yaml", cases.to_yaml(twice)
    path.write_text(text, encoding="utf-8")
    for written in (text, None):
        with pytest.raises(golden.GoldenError, match="same call"):
            golden.compare(path, twice, written)
