"""Version 2 of FastGelu and Gelu: published beside version 1, changing only which variant runs and its dispatch."""

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
    assert (v2 / "elementwise-bias-gelu.wgsl.jinja").read_bytes() == \
        (REPO_SPECS / op / "elementwise-bias-gelu.wgsl.jinja").read_bytes()


def test_load_kernel_picks_a_version():
    from conformance.errors import ManifestError
    from conformance.gpu.kernel import load_kernel
    assert load_kernel("com.microsoft.Gelu").package.version == 2
    assert load_kernel("com.microsoft.Gelu", version=1).package.root == REPO_SPECS / "com.microsoft.Gelu"
    assert load_kernel("com.microsoft.Softmax").package.version == 1
    with pytest.raises(ManifestError, match="no version 3"):
        load_kernel("com.microsoft.Gelu", version=3)
    with pytest.raises(ManifestError, match="not 1"):
        load_kernel(Path(REPO_SPECS / "com.microsoft.Gelu@2"), version=1)
