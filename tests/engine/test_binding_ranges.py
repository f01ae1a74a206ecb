"""Bindings over part of a tensor (`first` / `count`): planned offsets and sizes, their rejections, and what a
manifest may not write.

Worked out by hand from version 2 of the GELU packages: a split variant binds the first `bulk` elements as
whole vectors and the rest as scalars, where bulk = (numel - 1) // s * s and
s = max(8, minStorageBufferOffsetAlignment // dtypeBytes), so that the scalar binding starts at a multiple of
the device's storage offset alignment.
"""

from __future__ import annotations

import copy

import pytest

from conformance import BASELINE, ContractError, ManifestError, load_kernel
from conformance.engine.manifest import Manifest
from tests.engine.conftest import kernel_from

F32, F16 = "float32", "float16"
ALIGN32 = BASELINE.restricted("align32", limits={"minStorageBufferOffsetAlignment": 32})
SMALL_BUFFER = BASELINE.restricted("buffer4k", limits={"maxBufferSize": 4096})


@pytest.fixture(scope="module")
def fastgelu2():
    return load_kernel("com.microsoft.FastGelu", version=2)


def _storage(pass_plan):
    return {
        b.name: (b.byte_offset, b.byte_size, b.element_type) for b in pass_plan.bindings if b.buffer_type != "uniform"
    }


@pytest.mark.parametrize(
    "profile, shape, dtype, variant, bulk",
    [
        # 1000 f32 whose rows of 125 rule out vec4: s = 256 // 4 = 64 -> bulk 999 // 64 * 64 = 960
        (BASELINE, (8, 125), F32, "split_f32_no_bias", 960),
        # the same call planned for a device that aligns storage offsets to 32 bytes: s = 8 -> bulk 992
        (ALIGN32, (8, 125), F32, "split_f32_no_bias", 992),
        # 12297 f16: s = 128 -> bulk 12296 // 128 * 128 = 12288, nine elements left
        (BASELINE, (3, 4099), F16, "split_f16_no_bias", 12288),
        # a multiple of s still leaves a tail (bulk stops one alignment early): 256 f16 with rows of 3 is not
        # possible, so 129 x 2 = 258 -> bulk 257 // 128 * 128 = 256, tail 2
        (BASELINE, (129, 2), F16, "split_f16_no_bias", 256),
    ],
)
def test_split_plan(fastgelu2, profile, shape, dtype, variant, bulk):
    plan = fastgelu2.plan(profile=profile, X=(shape, dtype))
    numel = shape[0] * shape[1]
    size = 2 if dtype == F16 else 4
    width = 8 if dtype == F16 else 4
    assert plan.variant == variant
    (main,) = plan.passes
    vector = "vec4<u32>" if dtype == F16 else "vec4<f32>"
    scalar = "f16" if dtype == F16 else "f32"
    assert _storage(main) == {
        "x": (0, bulk * size, vector),
        "xTail": (bulk * size, (numel - bulk) * size, scalar),
        "y": (0, bulk * size, vector),
        "yTail": (bulk * size, (numel - bulk) * size, scalar),
    }
    assert (bulk * size) % profile.limits["minStorageBufferOffsetAlignment"] == 0
    params = next(b for b in main.bindings if b.buffer_type == "uniform")
    assert dict((n, v) for n, _, v in params.fields) == {"count": bulk // width, "tail": numel - bulk}
    assert main.dispatch.threads == bulk // width + numel - bulk
    assert plan.as_dict()["passes"][0]["bindings"][1]["byteOffset"] == bulk * size


def test_split_needs_more_than_one_alignment(fastgelu2):
    # 64 f32 or fewer leave no whole alignment before the tail: the strided tail variant takes them
    assert fastgelu2.plan(profile=BASELINE, X=((5, 13), F32)).variant == "split_f32_no_bias"  # 65
    assert fastgelu2.plan(profile=BASELINE, X=((4, 15), F32)).variant == "vec4_tail_no_bias"  # 60


def test_split_bias_lanes_cross_rows(fastgelu2):
    # rows of 9: a vector's lanes straddle two rows, so the bias binding is the whole scalar bias
    plan = fastgelu2.plan(profile=BASELINE, X=((100, 9), F16), bias=((9,), F16))
    assert plan.variant == "split_f16_bias"
    assert _storage(plan.passes[0])["bias"] == (0, 18, "f16")


def _ranged(raw: dict, **fields) -> dict:
    """Gelu version 2's f32 split variant with fields of its tail binding xTail replaced."""
    raw = copy.deepcopy(raw)
    variant = next(v for v in raw["variants"] if v["id"] == "split_f32")
    tail = next(b for b in variant["passes"][0]["bindings"] if b["name"] == "xTail")
    tail.update(fields)
    for key in [k for k, v in fields.items() if v is None]:
        del tail[key]
    return raw


@pytest.fixture(scope="module")
def gelu2_raw():
    return copy.deepcopy(load_kernel("com.microsoft.Gelu", version=2).manifest.raw)


def test_misaligned_first_is_rejected(gelu2_raw):
    raw = _ranged(gelu2_raw, first="$misaligned")
    next(v for v in raw["variants"] if v["id"] == "split_f32")["constants"]["misaligned"] = "bulk + 1"
    with pytest.raises(ContractError) as info:
        kernel_from(raw).plan(profile=BASELINE, X=((1001,), F32))
    assert info.value.reason == "binding-offset"
    assert "byte 3844" in str(info.value) and "minStorageBufferOffsetAlignment = 256" in str(info.value)


def test_range_past_the_tensor_is_rejected(gelu2_raw):
    raw = _ranged(gelu2_raw, count=64)  # the tail holds 41 elements
    with pytest.raises(ContractError) as info:
        kernel_from(raw).plan(profile=BASELINE, X=((1001,), F32))
    assert info.value.reason == "binding-range"
    assert "[960, 1024)" in str(info.value) and "'X', which has 1001" in str(info.value)


def test_ranged_tensor_must_fit_max_buffer_size(gelu2_raw):
    # without the manifest's own whole-tensor condition, each binding alone would fit a 4096-byte buffer
    # limit; the tensor's buffer (4100 bytes) does not, and the planner says so
    raw = copy.deepcopy(gelu2_raw)
    variant = next(v for v in raw["variants"] if v["id"] == "split_f32")
    variant["when"] = [w for w in variant["when"] if "maxBufferSize" not in w]
    with pytest.raises(ContractError) as info:
        kernel_from(raw).plan(profile=SMALL_BUFFER, X=((1025,), F32))
    assert info.value.reason == "device-limit"
    assert "4100 bytes" in str(info.value) and "maxBufferSize = 4096" in str(info.value)


@pytest.mark.parametrize(
    "fields, pointer, text",
    [
        ({"first": "$nowhere"}, "/variants/1/passes/0/bindings", "$nowhere in binding 'xTail' is not a constant"),
        ({"first": -1}, "/variants/1/passes/0/bindings/1/first", ""),
        ({"count": "bulk"}, "/variants/1/passes/0/bindings/1/count", ""),
    ],
)
def test_malformed_ranges(gelu2_raw, fields, pointer, text):
    with pytest.raises(ManifestError) as info:
        Manifest(_ranged(gelu2_raw, **fields), file="x.json")
    assert any(p.pointer.startswith(pointer) for p in info.value.problems), str(info.value)
    assert text in str(info.value)


def test_range_on_a_uniform_is_a_manifest_error(gelu2_raw):
    raw = copy.deepcopy(gelu2_raw)
    params = raw["variants"][0]["passes"][0]["bindings"][-1]
    params["first"] = 0
    with pytest.raises(ManifestError) as info:
        Manifest(raw, file="x.json")
    assert "first applies to storage bindings, not to a uniform" in str(info.value)
