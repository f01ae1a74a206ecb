"""com.microsoft.Softmax on lavapipe: every variant, split dispatches, any workgroup size, f16, empty tensors,
large magnitudes, and a kernel without the max subtraction caught."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from conformance import BASELINE, NoVariantError, load_kernel

from .conftest import SOFTMAX, run_and_compare

SMALL_DISPATCH = BASELINE.restricted("small-dispatch", limits={"maxComputeWorkgroupsPerDimension": 4})

SHAPES = [
    ((1, 1), "scalar"),
    ((3, 17), "scalar"),
    ((3, 2, 31), "scalar"),
    ((4, 8), "vec4"),
    ((3, 1000), "vec4"),
    ((5, 4096), "vec4"),
    ((2, 4100), "vec4_looped"),
    ((2, 1025), "scalar"),
    ((2, 2049), "looped"),
    ((2, 5003), "looped"),
    ((2, 20000), "vec4_looped"),
    ((7,), "scalar"),
    ((0, 8), "vec4"),
    ((3, 0), "vec4"),
]


@pytest.mark.parametrize("scale", [1.0, 30.0])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape, variant", SHAPES, ids=[str(s) for s, _ in SHAPES])
def test_variants_shapes_and_dtypes(softmax_kernel, shape, variant, dtype, scale):
    rng = np.random.default_rng(zlib.crc32(repr((shape, dtype, scale)).encode()))
    x = rng.normal(0, scale, shape).astype(dtype)
    plan, run, results = run_and_compare(softmax_kernel, X=x)
    assert plan.variant == variant
    assert results["Y"].passed, results["Y"].message()
    if x.size:
        np.testing.assert_allclose(
            run.outputs["Y"].astype(np.float64).sum(-1), 1, rtol=2e-3 if dtype == "float16" else 1e-5
        )


@pytest.mark.parametrize("rows, counts", [(13, (4, 4, 1)), (37, (4, 4, 3)), (64, (4, 4, 4))])
def test_rows_past_the_dispatch_limit_split_over_y_and_z(softmax_kernel, rows, counts):
    rng = np.random.default_rng(rows)
    for n in (12, 13, 1030):
        plan, run, results = run_and_compare(
            softmax_kernel, profile=SMALL_DISPATCH, X=rng.normal(0, 3, (rows, n)).astype(np.float32)
        )
        assert plan.passes[0].dispatch.counts == counts
        assert results["Y"].passed, (n, results["Y"].message())


def test_more_rows_than_max_compute_workgroups_per_dimension(softmax_kernel, device):
    limit = device.profile.limits["maxComputeWorkgroupsPerDimension"]
    x = np.random.default_rng(3).normal(0, 3, (limit + 77, 3)).astype(np.float32)
    plan, run, results = run_and_compare(softmax_kernel, tunables={"WORKGROUP_SIZE": 1}, X=x)
    assert plan.passes[0].dispatch.counts[1] > 1
    assert results["Y"].passed, results["Y"].message()


@pytest.mark.parametrize("size", [1, 3, 7, 100, 192, 255, 1024])
def test_any_workgroup_size(softmax_kernel, size):
    rng = np.random.default_rng(size)
    for n in (1000, 777, 5):
        plan, run, results = run_and_compare(
            softmax_kernel, tunables={"WORKGROUP_SIZE": size}, X=rng.normal(0, 5, (3, n)).astype(np.float32)
        )
        assert results["Y"].passed, (size, n, plan.variant, results["Y"].message())


def test_large_magnitudes_do_not_overflow(softmax_kernel):
    rng = np.random.default_rng(4)
    x = rng.normal(0, 1e3, (4, 64)).astype(np.float32)
    x[0] += 1e30
    x[1] = np.linspace(-1e38, 1e38, 64)
    plan, run, results = run_and_compare(softmax_kernel, X=x)
    assert results["Y"].passed, results["Y"].message()
    assert np.isfinite(run.outputs["Y"]).all()


def test_axis_attribute(softmax_kernel):
    x = np.random.default_rng(5).normal(size=(2, 3, 8)).astype(np.float32)
    for axis in (-1, 2):
        assert run_and_compare(softmax_kernel, attributes={"axis": axis}, X=x)[2]["Y"].passed
    with pytest.raises(NoVariantError, match="axisOk"):
        softmax_kernel(X=x, axis=0)


def test_a_kernel_without_the_max_subtraction_is_caught(package_copy, device):
    dst = package_copy(SOFTMAX)
    path = dst / "softmax.wgsl.jinja"
    text = path.read_text()
    path.write_text(text.replace("  let m = {{ V }}(partial[0]);", "  let m = {{ V }}(0.0);"))
    naive = load_kernel(dst, device=device)
    x = np.random.default_rng(6).normal(0, 1, (4, 64)).astype(np.float32)
    assert run_and_compare(naive, X=x)[2]["Y"].passed  # harmless on small inputs
    result = run_and_compare(naive, X=x + np.float32(100))[2]["Y"]  # exp(100) overflows f32
    assert not result.passed
