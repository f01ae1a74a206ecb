"""Versions 2 (FastGelu, Gelu, LayerNormalization, Softmax): published beside version 1, changing only which variant
runs and its dispatch."""

import json
from pathlib import Path

import pytest

from conformance.engine.package import REPO_SPECS, load_package, package_versions
from conformance.tools import diff

VERSIONED = ["com.microsoft.FastGelu", "com.microsoft.Gelu"]


@pytest.mark.parametrize("op", VERSIONED)
def test_v2_changes_only_variant_and_dispatch(op):
    """Every call either version's generator makes: same outcome, same outputs, same rejection reason; only the
    variant and its dispatch (and, for a no-variant rejection, the per-variant detail listing the variants) differ."""
    old, new = load_package(REPO_SPECS / op), load_package(REPO_SPECS / f"{op}@2")
    assert (old.version, new.version) == (1, 2) and new.name == f"{op}@2"
    (result,) = diff.diff({old.name: old}, {new.name: new})
    assert result.changes, "version 2 should select a new variant somewhere"
    for change in result.changes:
        assert change.old["outcome"] == change.new["outcome"], change.case
        if change.new["outcome"] == "accepted":
            assert set(change.fields) <= {"variant", "passes"}, (change.case, change.fields)
            assert change.old["outputs"] == change.new["outputs"], change.case
        else:
            assert change.fields == ["detail"] and change.new["reason"] == "no-variant", change.case
            assert set(change.old["detail"]) < set(change.new["detail"]), change.case
    assert any(c.new.get("variant", "").startswith("vec8_f16") for c in result.changes)


@pytest.mark.parametrize("op", VERSIONED)
def test_v1_is_the_published_version_1(op):
    """Version 1 stays where it was, without a version field (byte-identical to before version 2)."""
    assert package_versions(op) == {1: REPO_SPECS / op, 2: REPO_SPECS / f"{op}@2"}
    assert "version" not in json.loads((REPO_SPECS / op / "manifest.json").read_text())
    v2 = REPO_SPECS / f"{op}@2"
    assert (v2 / "elementwise-bias-gelu.wgsl.jinja").read_bytes() == (
        REPO_SPECS / op / "elementwise-bias-gelu.wgsl.jinja"
    ).read_bytes()


def test_load_kernel_picks_a_version():
    from conformance.errors import ManifestError
    from conformance.gpu.kernel import load_kernel

    assert load_kernel("com.microsoft.Gelu").package.version == 2
    assert load_kernel("com.microsoft.Gelu", version=1).package.root == REPO_SPECS / "com.microsoft.Gelu"
    assert load_kernel("com.microsoft.Softmax").package.version == 2
    assert load_kernel("com.microsoft.Softmax", version=1).package.root == REPO_SPECS / "com.microsoft.Softmax"
    assert load_kernel("ai.onnx.Add").package.version == 1
    with pytest.raises(ManifestError, match="no version 3"):
        load_kernel("com.microsoft.Gelu", version=3)
    with pytest.raises(ManifestError, match="not 1"):
        load_kernel(Path(REPO_SPECS / "com.microsoft.Gelu@2"), version=1)


ROW_OPS = ["com.microsoft.LayerNormalization", "com.microsoft.Softmax"]


@pytest.mark.parametrize("op", ROW_OPS)
def test_row_ops_v2_change_only_the_dispatch(op):
    """Every call either version's generator makes: same outcome, variant, outputs and rejection; version 2 only
    sizes the workgroups differently (``conformance diff specs/<op> specs/<op>@2``)."""
    old, new = load_package(REPO_SPECS / op), load_package(REPO_SPECS / f"{op}@2")
    assert (old.version, new.version) == (1, 2) and package_versions(op)[1] == REPO_SPECS / op
    assert "version" not in json.loads((REPO_SPECS / op / "manifest.json").read_text())
    (result,) = diff.diff({old.name: old}, {new.name: new})
    assert result.changes, "version 2 should dispatch some call differently"
    for change in result.changes:
        assert change.old["outcome"] == change.new["outcome"] == "accepted", change.case  # rejections word alike
        assert change.fields == ["passes"], (change.case, change.fields)
        assert change.old["outputs"] == change.new["outputs"] and change.old["variant"] == change.new["variant"]


def _sizing(plan):
    c = plan.passes[0].constants
    return plan.passes[0].dispatch.workgroup_size, c["perThread"], c["rowThreads"], c["rowsPerGroup"]


@pytest.mark.parametrize("op", ROW_OPS)
def test_row_ops_v2_size_workgroups_from_the_row_count_too(op):
    """Small tensors: one vec4 per invocation (v1: four, so a BERT-base LayerNorm ran 64 invocations a row);
    short rows: several per workgroup; large tensors: four per invocation, one row per workgroup, as v1, unless
    a row needs no more than 32 lanes."""
    from conformance.gpu.kernel import load_kernel

    def plan(version, shape):
        args = {"X": (shape, "float32")}
        if op.endswith("LayerNormalization"):
            args |= {"scale": ((shape[-1],), "float32"), "bias": ((shape[-1],), "float32")}
        return load_kernel(op, version=version).plan(**args)

    assert plan(1, (1, 128, 768)).passes[0].dispatch.workgroup_size == 64
    assert _sizing(plan(2, (1, 128, 768))) == (192, 1, 192, 1)  # 128 rows: spread wide
    assert _sizing(plan(2, (1, 1024, 1024))) == (128, 2, 128, 1)  # 1 Mi elements: two each
    assert _sizing(plan(2, (1, 12, 128, 32))) == (128, 1, 32, 4)  # rows of 8 vec4: four a group
    assert _sizing(plan(2, (4096, 1024))) == (64, 4, 64, 1)  # 4 Mi: v1's sizing
    assert _sizing(plan(2, (1, 32, 512, 512))) == (128, 4, 32, 4)  # 8 Mi, rows of 32 lanes
    if op.endswith("LayerNormalization"):
        assert plan(2, (1, 128, 768)).passes[0].constants["prefetch"] is True
        assert plan(2, (4096, 1024)).passes[0].constants["prefetch"] is False


@pytest.mark.parametrize("op", ROW_OPS)
def test_row_ops_v2_templates_are_self_contained(op):
    """The JavaScript template engine (@huggingface/jinja) has no {% import %}: version 2 defines its macros (and
    writes no power operator in its templates)."""
    v2 = REPO_SPECS / f"{op}@2"
    templates = sorted(v2.glob("*.jinja"))
    assert [t.name for t in templates] == [
        {
            "com.microsoft.LayerNormalization": "layer-norm-multirow.wgsl.jinja",
            "com.microsoft.Softmax": "softmax-multirow.wgsl.jinja",
        }[op]
    ]
    for t in templates:
        text = t.read_text()
        assert "{% import" not in text and "{% include" not in text and "**" not in text, t
        assert "{% macro reduce(" in text
