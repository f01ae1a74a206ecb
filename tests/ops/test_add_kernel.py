"""ai.onnx.Add on lavapipe: the accepted broadcast forms, their vec4 paths, f16, empty tensors, split dispatches,
and the forms the contract rejects."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from conformance import BASELINE, ContractError

from .conftest import run_and_compare

SMALL_DISPATCH = BASELINE.restricted("small-dispatch", limits={"maxComputeWorkgroupsPerDimension": 4})

FORMS = [  # (A shape, B shape, variant)
    ((4, 8), (4, 8), "vec4_same"),
    ((1, 3, 4), (3, 4), "vec4_same"),
    ((4, 8), (8,), "vec4_suffix"),
    ((2, 3, 4), (3, 4), "vec4_suffix"),
    ((2, 6), (2, 6), "vec4_same"),
    ((4, 8), (), "vec4_single"),
    ((4, 8), (1, 1), "vec4_single"),
    ((4, 8), (1,), "vec4_single"),
    ((3, 5), (5,), "scalar"),
    ((3, 5), (3, 5), "scalar"),
    ((5,), (), "scalar"),
    ((7, 3), (1,), "scalar"),
    ((), (), "scalar"),
    ((2, 3, 6), (6,), "scalar"),
    ((1031,), (1031,), "split_same"),
    ((0, 4), (4,), "vec4_suffix"),
    ((3, 0), (0,), "vec4_same"),
    ((1031,), (), "split_broadcast"),
    ((200, 3), (3,), "split_broadcast"),
    ((129, 2), (2,), "split_broadcast"),
    ((64,), (64,), "vec4_same"),
]
# Planned on BASELINE (minStorageBufferOffsetAlignment 256): the split variants take counts above one alignment
# (64 f32, 128 f16 elements) that no vec4 variant takes; 258 f16 elements leave a bulk of 256 and a tail of 2.


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("a_shape, b_shape, variant", FORMS, ids=[f"{a}+{b}" for a, b, _ in FORMS])
def test_accepted_forms(add_kernel, a_shape, b_shape, variant, dtype):
    rng = np.random.default_rng(zlib.crc32(repr((a_shape, b_shape, dtype)).encode()))
    a = np.asarray(rng.normal(0, 3, a_shape)).astype(dtype)
    b = np.asarray(rng.normal(0, 3, b_shape)).astype(dtype)
    plan, run, results = run_and_compare(add_kernel, profile=BASELINE, A=a, B=b)
    assert plan.variant == variant
    assert run.outputs["C"].shape == a_shape
    assert results["C"].passed, results["C"].message()
    if dtype == "float32":  # lavapipe rounds to nearest, so its f32 sums are the correctly rounded ones
        np.testing.assert_array_equal(run.outputs["C"], a + b)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((4, 8), (4, 1)),
        ((4, 8), (2, 8)),
        ((8,), (4, 8)),
        ((), (1,)),
        ((4, 8), (3,)),
        ((4, 8), (1, 4, 8)),
        ((2, 3, 4), (1, 3, 4)),
    ],
)
def test_forms_needing_strides_or_a_larger_output_are_rejected(add_kernel, a_shape, b_shape):
    with pytest.raises(ContractError) as info:
        add_kernel.plan(BASELINE, A=(a_shape, "float32"), B=(b_shape, "float32"))
    assert info.value.reason == "no-variant"


def test_split_dispatch(add_kernel, device):
    rng = np.random.default_rng(7)
    for a_shape, b_shape, variant in (
        ((60, 16), (16,), "vec4_suffix"),
        ((30, 13), (13,), "split_broadcast"),
        ((65, 16), (), "vec4_single"),
        ((3, 13), (13,), "scalar"),
    ):
        a, b = rng.normal(size=a_shape).astype(np.float32), np.asarray(rng.normal(size=b_shape)).astype(np.float32)
        plan, run, results = run_and_compare(
            add_kernel, profile=SMALL_DISPATCH, tunables={"WORKGROUP_SIZE": 8}, A=a, B=b
        )
        assert plan.variant == variant and plan.passes[0].dispatch.counts[1] > 1
        assert results["C"].passed, results["C"].message()
    limit = device.profile.limits["maxComputeWorkgroupsPerDimension"]
    a = rng.normal(size=(4 * limit + 6,)).astype(np.float32)  # not a multiple of 4: split, a vector each
    plan, run, results = run_and_compare(add_kernel, tunables={"WORKGROUP_SIZE": 1}, A=a, B=a[::-1].copy())
    assert plan.variant == "split_same" and plan.passes[0].dispatch.counts[1] > 1 and results["C"].passed
    with pytest.raises(ContractError, match="scalarDispatchFits is false"):  # 66 workgroups: 4 x 4 x 4 at most
        add_kernel.plan(SMALL_DISPATCH, {"WORKGROUP_SIZE": 8}, A=((65 * 8 + 1,), "float32"), B=((1,), "float32"))


def test_overflowing_f16_sums_are_unconstrained_the_rest_exact(add_kernel):
    a = np.array([60000, 1, 2, 3], np.float16)
    b = np.array([60000, 1, 2, 3], np.float16)
    plan, run, results = run_and_compare(add_kernel, A=a, B=b)
    assert results["C"].passed and results["C"].unconstrained == 1
    np.testing.assert_array_equal(run.outputs["C"][1:], [2, 4, 6])
