"""The families derived from the conditions' boundaries: attributes, device limits, size steps, suffix positions.

Each is checked on a synthetic package (a renamed copy with changed predicates and no op record), so what is
tested is that the values come from the manifest, not from knowledge of an op."""

from __future__ import annotations

import json
import math
import pathlib
import shutil

import numpy as np
import pytest

import cases
from cases.calls import CallSpec
from cases.conditions import Analysis, around
from cases.data import make_inputs
from cases.golden import compare, load_golden, to_yaml
from conformance.certify.testjson import build_test, load_test_cases
from conformance.engine.expressions import unparse
from conformance.engine.package import load_package
from conformance.ops import record_for
from reference import compare as compare_values
from tests.conftest import golden_cases

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _synthetic(tmp_path_factory, source: str, name: str, change) -> object:
    specs = tmp_path_factory.mktemp("specs")
    target = specs / f"com.example.{name}"
    shutil.copytree(ROOT / "specs" / source, target)
    raw = json.loads((target / "manifest.json").read_text())
    raw["domain"], raw["name"] = "com.example", name
    change(raw)
    (target / "manifest.json").write_text(json.dumps(raw, indent=2))
    return load_package(target)


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    """Softmax renamed, with a float attribute bounded by two constants, a bool attribute, and its axis
    compared with ranks.X - 2 instead of ranks.X - 1."""

    def change(raw):
        raw["attributes"]["gain"] = {"type": "float", "default": 1.5}
        raw["attributes"]["strict"] = {"type": "bool", "default": False}
        raw["derive"]["gainOk"] = "attributes.gain >= 0.25 and attributes.gain < 4"
        raw["derive"]["axisOk"] = "attributes.axis == -1 or attributes.axis == ranks.X - 2"
        raw["derive"]["baseOk"] += " and gainOk and (not attributes.strict or ranks.X >= 2)"

    return _synthetic(tmp_path_factory, "com.microsoft.Softmax", "GatedSoftmax", change)


@pytest.fixture(scope="module")
def gated_cases(gated):
    return cases.generate(gated)


def _family(generated, family):
    return [c for c in generated if family in c.families]


def test_around_gives_the_neighbours():
    assert around(5) == (4, 5, 6)
    assert around(0.25) == (math.nextafter(0.25, -math.inf), 0.25, math.nextafter(0.25, math.inf))
    assert around(True) == (False, True)
    assert around(math.inf) == () and around(None) == ()


def test_compared_with_finds_both_sides_of_each_comparison(gated):
    analysis = Analysis(gated.manifest)
    gain = sorted(analysis.evaluate(other, {}) for _, other in analysis.compared_with("attributes", "gain"))
    assert gain == [0.25, 4]
    axis = [unparse(other) for _, other in analysis.compared_with("attributes", "axis")]
    assert sorted(axis) == ["-1", "ranks.X - 2"]  # a constant, and an expression of the call


def test_float_attribute_at_each_bound_and_either_side(gated_cases):
    values = {c.attributes["gain"] for c in _family(gated_cases, "attributes") if "gain" in c.attributes}
    bounds = set(around(0.25)) | set(around(4.0)) | {1.0}
    assert values == bounds
    for c in _family(gated_cases, "attributes"):
        if "gain" not in c.attributes:
            continue
        inside = 0.25 <= c.attributes["gain"] < 4
        assert c.accepted == inside, c.id
        if not inside:  # the rejection is checked against the predicate that fails, for every variant
            assert c.expect["reason"] == "no-variant"
            assert all("gainOk is false" in why for why in c.expect["detail"].values()), c.expect["detail"]


def test_int_attribute_compared_with_an_expression_of_the_call(gated_cases):
    """axis == -1 or axis == ranks.X - 2: per rank r, -2, -1, 0 and r - 3, r - 2, r - 1."""
    by_rank: dict[int, dict[int, bool]] = {}
    for c in _family(gated_cases, "attributes"):
        if "axis" in c.attributes:
            rank = len(c.inputs["X"][0])
            by_rank.setdefault(rank, {})[c.attributes["axis"]] = c.accepted
    assert set(by_rank) == {1, 2, 3}
    for rank, seen in by_rank.items():
        assert set(seen) == {-2, -1, 0, rank - 3, rank - 2, rank - 1}
        assert {a for a, ok in seen.items() if ok} == {-1, rank - 2}
    for c in _family(gated_cases, "attributes"):
        if "axis" in c.attributes and not c.accepted:
            assert all("axisOk is false" in why for why in c.expect["detail"].values())


def test_bool_attribute_both_ways(gated_cases):
    assert {c.attributes["strict"] for c in gated_cases if "strict" in c.attributes} == {False, True}


def test_attribute_cases_carry_the_attribute_in_id_yaml_and_test_json(gated, gated_cases, tmp_path):
    some = next(c for c in _family(gated_cases, "attributes") if c.attributes.get("gain") == 0.25)
    assert some.id.endswith("~gain=0.25")
    path = tmp_path / "golden.yaml"
    path.write_text(to_yaml(gated_cases))
    assert {c.id: c.attributes for c in load_golden(path)} == {c.id: c.attributes for c in gated_cases}
    assert not compare(path, gated_cases).differs
    spec = CallSpec.of(gated.manifest, some.inputs, attributes=some.attributes)
    assert spec.call_args()["gain"] == 0.25


def test_no_attributes_no_attribute_cases(generated, package):
    if not package.manifest.attributes:
        assert not _family(generated, "attributes")


def test_device_limit_at_the_compared_value(gated_cases):
    """8 * min(WORKGROUP_SIZE, cap) <= device.limits.maxComputeWorkgroupStorageSize (two f32 tree arrays per
    invocation, WORKGROUP_SIZE 256): 2047, 2048, 2049."""
    seen = {}
    for c in _family(gated_cases, "device-limits"):
        value = c.profile.limits["maxComputeWorkgroupStorageSize"]
        seen[value] = c
    assert set(seen) == {2047, 2048, 2049}
    assert seen[2048].accepted and seen[2049].accepted and not seen[2047].accepted
    assert all("workgroupOk is false" in why for why in seen[2047].expect["detail"].values())


def test_size_steps_at_the_first_workgroup_step_and_the_last_cached_row(gated_cases):
    steps = {c.inputs["X"][0][-1]: c for c in _family(gated_cases, "size-steps")}
    # 32 * ceilDiv(n / 4, 32 * perThread), perThread = 4: 32 invocations up to n = 512, 64 from n = 516
    assert steps[512].expect["passes"][0]["workgroupSize"] == 32
    assert steps[516].expect["passes"][0]["workgroupSize"] == 64
    # the last vec4 row kept in registers: n / 4 <= 4 * 256
    assert steps[4096].expect["variant"] == "vec4" and steps[4100].expect["variant"] == "vec4_looped"


@pytest.fixture(scope="module")
def short_suffix(tmp_path_factory):
    """Add renamed, its suffix rule cut to five trailing positions."""

    def change(raw):
        clauses = [
            f"(ranks.B < {k} or dim(shapes.B, ranks.B - {k}) == dim(shapes.A, ranks.A - {k}))" for k in range(1, 6)
        ]
        raw["derive"]["suffixOk"] = " and ".join(["ranks.B <= ranks.A"] + clauses)

    return _synthetic(tmp_path_factory, "ai.onnx.Add", "ShortAdd", change)


def test_suffix_positions_follow_the_rank_comparisons(short_suffix):
    generated = cases.generate(short_suffix)
    top = [c for c in generated if c.family == "broadcast" and len(c.inputs["A"][0]) == 5]
    a = top[0].inputs["A"][0]
    assert all(c.inputs["A"][0] == a for c in top)
    assert all(x != y for x, y in zip(a, a[1:]))  # neighbouring dims differ: a shifted index is seen
    for k in range(6):  # every suffix, accepted
        suffix = next(c for c in top if c.inputs["B"][0] == a[k:])
        assert suffix.accepted
        for j in range(5 - k):  # one dim off at each position, rejected at that clause
            off = a[k:][:j] + (a[k:][j] + 1,) + a[k:][j + 1 :]
            bad = next(c for c in top if c.inputs["B"][0] == off)
            assert not bad.accepted
            assert f"dim(shapes.B, ranks.B - {5 - k - j})" in next(iter(bad.expect["detail"].values()))


def test_suffix_companion_at_the_dispatch_limit():
    generated = cases.generate(load_package(ROOT / "specs" / "ai.onnx.Add"))
    at = {c.inputs["A"][0]: c for c in generated if c.family == "dispatch-limit" and len(c.inputs["A"][0]) == 2}
    ((rows, c),) = [s for s, case in at.items() if case.accepted]
    # exactly the limit: an unaligned count past splitElements, so the split variant (same dispatch limit as scalar)
    assert at[(rows, c)].expect["variant"] == "split_broadcast" and rows * c == 4**3 * 256
    assert not at[(rows + 1, c)].accepted


def test_a_large_float_attribute_shows_in_the_values():
    """The 1.0 case of a float attribute: a kernel that kept the default would be out of tolerance."""
    package = load_package(ROOT / "specs" / "com.microsoft.LayerNormalization")
    case = next(c for c in golden_cases(package.name) if c.attributes.get("epsilon") == 1.0 and c.accepted)
    record = record_for(package.name)
    inputs = make_inputs(case)
    expected = record.compute(inputs, case.attributes)["Y"]
    ignored = record.compute(inputs, None)["Y"].astype(case.inputs["X"][1])
    tolerance = record.tolerance(case.inputs["X"][1], inputs, case.attributes)
    assert not compare_values(ignored, expected, tolerance).passed
    assert np.isfinite(expected).all()


def test_test_json_keeps_the_attributes(tmp_path):
    package = load_package(ROOT / "specs" / "com.microsoft.Softmax")
    data = build_test(package)
    stored = [c for c in data["cases"] if c.get("attributes")]
    assert stored and all("~axis=" in c["id"] for c in stored)
    path = tmp_path / "test.json"
    path.write_text(json.dumps(data))
    loaded = {c.id: c for c in load_test_cases(package, path)}
    for c in stored:
        assert loaded["test.json/" + c["id"]].attributes == c["attributes"]
