"""Every family that applies to a manifest is present; the hand-checkable expectations are among the cases."""

from __future__ import annotations

import math

import cases
from cases.conditions import Analysis, dotted
from cases.data import MAX_CASE_ELEMENTS
from cases.families import FAMILY_NAMES
from cases.shapes import primary
from conformance.engine.expressions import attribute_paths
from conformance.engine.package import REPO_SPECS, load_package
from conformance.engine.profile import ALIGNMENT_LIMITS
from conformance.ops.registry import find as find_record


def applicable(manifest) -> set[str]:
    lead = primary(manifest)
    out = set(FAMILY_NAMES) - {"reach"}  # reach: only for variants fewer than three data cases select
    record = find_record(manifest.op_id)
    if not any(s.rank is None for s in manifest.inputs if s is not lead):
        out.discard("broadcast")
    if not (record and record.data):
        out.discard("values-op")
    if not (record and record.rows):
        out.discard("values-partial-nonfinite")
        out.discard("values-extremes")
    if not any(s.rank is not None for s in manifest.inputs if s is not lead):
        out.discard("optional-mismatch")
    if not any(sum(s.typevar == tv for s in manifest.inputs) > 1 for tv in manifest.type_constraints):
        out.discard("mixed-dtype")
    if not any("float16" in allowed for allowed in manifest.type_constraints.values()):
        out.discard("f16-availability")
    if not manifest.attributes:
        out.discard("attributes")
    if not any(
        (dotted(side) or ())[:2] == ("device", "limits")
        and len(dotted(side)) == 3
        and not {p[0] for p in attribute_paths(other)} & {"shapes", "ranks", "attributes", "present"}
        for _, side, other in Analysis(manifest).comparisons()
    ):
        out.discard("device-limits")
    if not any(_small_threshold(side, other) for _, side, other in Analysis(manifest).comparisons()):
        out.discard("thresholds")
    out.discard("size-steps")  # only where the variant or workgroup size changes with the last axis
    return out


def _small_threshold(side, other) -> bool:
    """A shape quantity compared with a side that reads the dtypes or an alignment limit and nothing of the call's
    shapes, ranks, attributes or presence (a few elements: a split threshold; sizes compared with a bare device
    limit are the limit families')."""
    paths = attribute_paths(other)
    roots = {p[0] for p in paths}
    return (
        "shapes" in {p[0] for p in attribute_paths(side)}
        and not roots & {"shapes", "ranks", "attributes", "present"}
        and (
            "dtypes" in roots
            or any(p[:2] == ("device", "limits") and p[2:3] and p[2] in ALIGNMENT_LIMITS for p in paths)
        )
    )


def test_every_applicable_family_present(package, generated):
    present = {f for c in generated for f in c.families}
    assert applicable(package.manifest) <= present


def test_value_families_have_several_cases(generated):
    for family in ("values-special", "values-nonfinite"):
        assert sum(family in c.families for c in generated) >= 2


def find(cases_, short, dtype, inputs):
    return [
        c
        for c in cases_
        if c.id.startswith(f"{short}/{dtype}/{inputs}/") and c.profile.name == "baseline" and not c.tunables
    ]


def test_hand_checked_expectations(package, generated):
    short = package.manifest.name
    if package.version != 1:
        return  # worked out by hand for version 1's variants (version 2's are checked against them by diff)
    expected = {
        "FastGelu": {"X[2,8]+bias[8]": "vec4_bias", "X[4,3]+bias[3]": "vec4_tail_bias", "X[5]": "vec4_tail_no_bias"},
        "Gelu": {"X[6]": "scalar", "X[8]": "vec4"},
    }.get(short, {})
    for inputs, variant in expected.items():
        found = find(generated, short, "f32", inputs)
        assert found, f"no case {short}/f32/{inputs}"
        assert {c.expect.get("variant") for c in found} == {variant}


def test_ids_unique_readable_and_stable(package, generated):
    ids = [c.id for c in generated]
    assert len(ids) == len(set(ids))
    short = package.name.rsplit(".", 1)[-1]  # "Gelu", or "Gelu@2" for version 2
    assert all(" " not in i and i.startswith(short + "/") for i in ids)
    assert [c.id for c in cases.generate(package)] == ids


def test_case_counts_in_range(generated):
    assert 100 <= len(generated) <= 600


def test_rejections_record_reason_and_detail(generated):
    for c in generated:
        if c.expect["outcome"] == "rejected":
            assert c.expect["reason"]
            if c.expect["reason"] == "no-variant":
                assert c.expect["detail"] and all(isinstance(v, str) for v in c.expect["detail"].values())
            assert "rejected" in c.markers


def test_limit_cases_run_cheaply_at_and_past_the_limit(generated):
    small = [c for c in generated if c.profile.name == "small-storage" and c.inputs.get("bias") is None]
    limit = small[0].profile.limits["maxStorageBufferBindingSize"]
    for c in small:
        shape, dtype = c.inputs[primary_role(c)]
        nbytes = math.prod(shape) * (2 if dtype == "float16" else 4)
        assert c.accepted == (nbytes <= limit), c.id
    assert {c.accepted for c in small} == {True, False}
    assert any(c.heavy for c in generated if "buffer_limit" in c.markers)
    split = [c for c in generated if c.profile.name == "small-dispatch" and c.accepted]
    assert any(p["workgroups"][1] > 1 for c in split for p in c.expect["passes"])


def primary_role(case):
    return next(iter(case.inputs))


def test_residue_classes_of_numel_and_last_dim(package, generated):
    pairs = set()
    for c in generated:
        shape, _ = c.inputs[primary_role(c)] or ((), None)
        if shape and c.profile.name == "baseline":
            n = 1
            for d in shape:
                n *= d
            pairs.add((n % 4, shape[-1] % 4))
    assert {p[0] for p in pairs} == {0, 1, 2, 3}
    if len(Analysis(package.manifest).moduli()) > 1 and package.version == 1:  # it tests the last dim's residue too
        assert {(0, 1), (0, 2), (0, 3), (0, 0), (1, 1), (2, 2), (3, 3)} <= pairs


def test_row_op_data_runs_where_the_variant_changes():
    """values-op puts the record's data on rows at the first length each residue class selects a new variant
    (the looped variants, here), as many rows as the stored-case cap allows, not on a guessed length."""
    generated = cases.generate(load_package(REPO_SPECS / "com.microsoft.LayerNormalization"))
    by_length = {}
    for c in generated:
        if "values-op" in c.families and c.accepted:
            by_length.setdefault(c.inputs["X"][0][-1], set()).add((c.inputs["X"][0], c.expect["variant"]))
    # scalar rows are cached up to 8 x 256 = 2048, vec4 rows up to 4 x 4 x 256 = 4096 (specs/README.md)
    assert {v for _, v in by_length[2049]} == {"looped", "looped_bias"}
    assert {v for _, v in by_length[4100]} == {"vec4_looped", "vec4_looped_bias"}
    assert all(math.prod(s) <= max(MAX_CASE_ELEMENTS, s[-1]) for s, _ in by_length[2049] | by_length[4100])
