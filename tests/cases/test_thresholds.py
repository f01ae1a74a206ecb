"""The thresholds family: shape counts at a device- and dtype-derived threshold, on the baseline and with the
alignment limits the manifest reads lowered.

Checked on a synthetic package (Add renamed, its split threshold changed to ``max(12, alignment // bytes)``, no
op record), so what is tested is that the values come from the manifest's own expressions, not from Add."""

from __future__ import annotations

import json
import math
import pathlib
import shutil

import pytest

import cases
from cases.conditions import Analysis, around
from cases.data import make_inputs
from cases.families import ALIGNMENT_VALUES, Ctx, alignment_profiles, read_limits, thresholds
from conformance.certify.device_truth import plan_for_device
from conformance.engine.package import load_package
from conformance.engine.planner import Planner
from conformance.engine.profile import BASELINE

ROOT = pathlib.Path(__file__).resolve().parents[2]
ALIGN = "minStorageBufferOffsetAlignment"


def _synthetic(tmp_path_factory, name: str, split_elements: str):
    specs = tmp_path_factory.mktemp("specs")
    target = specs / f"com.example.{name}"
    shutil.copytree(ROOT / "specs" / "ai.onnx.Add", target)
    raw = json.loads((target / "manifest.json").read_text())
    raw["domain"], raw["name"] = "com.example", name
    raw["derive"]["splitElements"] = split_elements
    (target / "manifest.json").write_text(json.dumps(raw, indent=2))
    return load_package(target)


@pytest.fixture(scope="module")
def twelve(tmp_path_factory):
    """At alignment 32 an f32 split of 12 elements puts the tail at byte 48: the planner rejects the offset."""
    return _synthetic(
        tmp_path_factory, "TwelveAdd", "max(12, device.limits.minStorageBufferOffsetAlignment // dtypeBytes(dtypes.T))"
    )


@pytest.fixture(scope="module")
def twelve_cases(twelve):
    return [c for c in cases.generate(twelve) if "thresholds" in c.families]


def _ctx(package) -> Ctx:
    m = package.manifest
    return Ctx(m, Planner(m), Analysis(m))


def _expected_thresholds() -> dict[tuple[str, str], int]:
    """(profile, dtype) -> the threshold the synthetic manifest's expression gives (alignment 256 or 32)."""
    out = {}
    for profile, align in (("baseline", 256), (f"{ALIGN}=32", 32)):
        for dtype, size in (("float32", 4), ("float16", 2)):
            out[profile, dtype] = max(12, align // size)
    return out


def test_alignment_profiles_come_from_the_limits_the_manifest_reads(twelve):
    ctx = _ctx(twelve)
    assert ALIGN in read_limits(ctx) and "minUniformBufferOffsetAlignment" not in read_limits(ctx)
    assert alignment_profiles(ctx) == ["baseline"] + [f"{ALIGN}={v}" for v in ALIGNMENT_VALUES]


def test_no_alignment_profile_when_the_manifest_does_not_read_one(tmp_path_factory):
    fixed = _synthetic(tmp_path_factory, "FixedAdd", "max(12, 64 // dtypeBytes(dtypes.T))")
    ctx = _ctx(fixed)
    assert alignment_profiles(ctx) == ["baseline"]
    counts = {(i.spec.arg("A")[1], math.prod(i.spec.arg("A")[0])) for i in thresholds(ctx)}
    # the dtype-dependent side still gives thresholds: 16 elements in f32, 32 in f16
    assert {n for d, n in counts if d == "float32"} == set(around(16))
    assert {n for d, n in counts if d == "float16"} == set(around(32))


def test_counts_sit_at_the_evaluated_threshold_and_either_side(twelve_cases):
    seen: dict[tuple[str, str], set[int]] = {}
    for c in twelve_cases:
        shape, dtype = c.inputs["A"]
        seen.setdefault((c.profile.name, dtype), set()).add(math.prod(shape))
    expected = _expected_thresholds()
    assert set(seen) == set(expected)
    for key, k in expected.items():
        assert seen[key] == set(around(k)), key


def test_suffix_companions_not_a_multiple_of_four(twelve_cases):
    """At the threshold exactly (64 f32 on the baseline), a suffix B of 2 elements: not split (`>` is strict)."""
    at = [c for c in twelve_cases if c.profile.name == "baseline" and c.inputs["A"] == ((32, 2), "float32")]
    by_b = {c.inputs["B"][0]: c for c in at}
    assert set(by_b) == {(32, 2), (2,)}
    assert by_b[(2,)].expect["variant"] == "scalar" and by_b[(32, 2)].expect["variant"] == "vec4_same"
    past = next(
        c
        for c in twelve_cases
        if c.profile.name == "baseline" and c.inputs["A"] == ((13, 5), "float32") and c.inputs["B"][0] == (5,)
    )
    assert past.expect["variant"] == "split_broadcast"


def test_accepted_cases_carry_data_rejected_ones_name_the_offset(twelve_cases):
    accepted = [c for c in twelve_cases if c.accepted]
    rejected = [c for c in twelve_cases if not c.accepted]
    assert {c.expect["variant"] for c in accepted} >= {"scalar", "vec4_same", "split_same", "split_broadcast"}
    for c in accepted:
        inputs = make_inputs(c)
        assert all(inputs[r].shape == tuple(c.inputs[r][0]) for r in ("A", "B"))
    # f32 at alignment 32: 12 elements past the threshold put the tail at byte 48, not a multiple of 32
    assert rejected and all(c.profile.limits[ALIGN] == 32 and c.inputs["A"][1] == "float32" for c in rejected)
    assert all(c.expect["reason"] == "binding-offset" for c in rejected)
    assert {math.prod(c.inputs["A"][0]) for c in rejected} == {13}


def test_alignment_cases_are_replanned_on_a_device_requiring_more(twelve, twelve_cases):
    """A device with the default 256 gets the call planned for it (the thresholds of 256), not a failure."""
    planner = Planner(twelve.manifest)
    case = next(c for c in twelve_cases if c.profile.name.startswith(ALIGN) and not c.accepted)
    moved, change = plan_for_device(case, planner, BASELINE)
    assert moved.profile.limits[ALIGN] == 256 and moved.accepted and moved.expect["variant"] == "scalar"
    assert f"{ALIGN} 32 (device has 256)" in change


def test_thresholds_on_the_split_packages(generated, package):
    """Every package whose variants compare a shape count with the alignment gets cases at alignment 32."""
    ctx = _ctx(package)
    on_alignment = [c for c in generated if "thresholds" in c.families and c.profile.name != "baseline"]
    assert bool(on_alignment) == (ALIGN in read_limits(ctx) and bool(thresholds(ctx)))
