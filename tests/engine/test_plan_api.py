"""The public API other issues build on: error classes, NoVariantError's listing, profiles."""

from __future__ import annotations

import pytest

import conformance
from conformance import (
    BASELINE,
    ConformanceError,
    ContractError,
    DeviceProfile,
    ExpressionError,
    ManifestError,
    NoVariantError,
    load_kernel,
)
from conformance.errors import DeviceError
from tests.engine.conftest import FASTGELU, GELU, NO_F16, SPECS


def test_error_hierarchy():
    assert issubclass(ContractError, ValueError) and issubclass(ContractError, ConformanceError)
    assert issubclass(NoVariantError, ContractError)
    assert issubclass(ManifestError, ValueError) and issubclass(ManifestError, ConformanceError)
    assert issubclass(ExpressionError, ValueError) and issubclass(ExpressionError, ConformanceError)


def test_exports():
    for name in (
        "load_kernel",
        "ContractError",
        "NoVariantError",
        "ManifestError",
        "ExpressionError",
        "BASELINE",
        "DeviceProfile",
    ):
        assert hasattr(conformance, name)


def test_issue_example(fastgelu):
    p = fastgelu.plan(profile=BASELINE, X=((4, 3), "float16"), bias=((3,), "float16"))
    assert p.variant == "vec4_tail_bias"


def test_no_variant_lists_every_variant_in_priority_order(fastgelu):
    with pytest.raises(ContractError) as info:  # callers may catch the base class
        fastgelu.plan(profile=NO_F16, X=((4, 8), "float16"), bias=((8,), "float16"))
    err = info.value
    assert isinstance(err, NoVariantError) and isinstance(err, ValueError)
    order = ["vec4_bias", "vec4_no_bias", "vec4_tail_bias", "vec4_tail_no_bias", "scalar_bias", "scalar_no_bias"]
    assert list(err.failures) == order
    lines = [line.strip() for line in str(err).splitlines()[1:]]
    assert [line.split(":")[0] for line in lines] == order
    for vid in order:
        assert err.failures[vid].startswith("baseOk is false")
        assert f"{vid}: {err.failures[vid]}" in str(err)


def test_no_variant_for_gelu_lists_both(gelu):
    with pytest.raises(NoVariantError) as info:
        gelu.plan(profile=NO_F16, X=((8,), "float16"))
    assert list(info.value.failures) == ["vec4", "scalar"]
    assert "com.microsoft.Gelu" in str(info.value)


def test_explicit_profile_is_used(fastgelu):
    tiny = BASELINE.restricted("tiny", limits={"maxComputeWorkgroupSizeX": 32})
    assert tiny.limits["maxComputeWorkgroupSizeX"] == 32
    assert "shader-f16" in tiny.features
    p = fastgelu.plan(profile=tiny, X=((8,), "float32"))
    assert p.profile == "tiny"
    assert p.passes[0].dispatch.workgroup_size == 32  # min(256, 256, 32)
    p = fastgelu.plan(BASELINE, X=((8,), "float32"))  # positional
    assert p.profile == "baseline" and p.passes[0].dispatch.workgroup_size == 256


def test_hand_written_profile():
    profile = DeviceProfile("handmade", {"maxComputeWorkgroupsPerDimension": 3}, frozenset())
    k = load_kernel(GELU, version=1)
    # 2001 elements (odd: scalar) -> 2001 threads -> 8 workgroups of 256; 3 per dimension -> 3 x 3
    p = k.plan(profile=profile, X=((2001,), "float32"))
    assert p.variant == "scalar"
    assert p.passes[0].dispatch.counts == (3, 3, 1)
    with pytest.raises(NoVariantError):
        k.plan(profile=profile, X=((8,), "float16"))  # no shader-f16 in a profile that does not list it


def test_restricted_drops_features():
    assert "shader-f16" in BASELINE.features
    assert "shader-f16" not in NO_F16.features
    assert NO_F16.limits == BASELINE.limits


def test_profile_rejects_unknown_limit():
    with pytest.raises(ValueError):
        BASELINE.restricted("bad", limits={"maxFoo": 1})


def test_default_profile_is_the_devices():
    k = load_kernel(FASTGELU, version=1)
    try:
        device = k.device
    except DeviceError as exc:  # pragma: no cover - the suite's machines have lavapipe
        pytest.skip(f"no WebGPU device: {exc}")
    p = k.plan(X=((8,), "float32"))
    assert p.profile == device.profile.name
    assert p.profile != BASELINE.name
    assert "llvmpipe" in p.profile.lower() or "lavapipe" in p.profile.lower()
    assert p.variant == "vec4_no_bias"


def test_load_kernel_by_name_and_path():
    assert load_kernel(FASTGELU, version=1).manifest.op_id == FASTGELU
    assert load_kernel(SPECS / GELU).manifest.op_id == GELU
    assert load_kernel(str(SPECS / GELU)).manifest.op_id == GELU
