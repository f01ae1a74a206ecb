"""Kernels against the float64 reference on lavapipe: every variant, both dtypes, the hard values."""

import json

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from reference import compare, reference_for

RNG = np.random.default_rng(20261130)


def check(kernel, profile=BASELINE, **arrays):
    plan, run = kernel.run(profile, verify=True, **arrays)
    ref = reference_for(kernel.manifest.domain, kernel.manifest.name)
    expected = ref.compute(arrays)["Y"]
    y = run.outputs["Y"]
    result = compare(y, expected, ref.tolerance(str(arrays["X"].dtype)), inputs=arrays["X"])
    assert result.passed, result.message()
    assert all(run.guards_intact.values()), run.guards_intact
    assert all(run.inputs_intact.values()), run.inputs_intact
    return plan, run, result


SHAPES = {  # FastGelu shape, with bias? -> variant a reader derives from the manifest
    ((64, 256), True): "vec4_bias",
    ((1024,), False): "vec4_no_bias",
    ((33, 7), True): "vec4_tail_bias",
    ((4097,), False): "vec4_tail_no_bias",
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,with_bias", list(SHAPES))
def test_fast_gelu_variants_match_reference(fast_gelu, dtype, shape, with_bias):
    x = RNG.normal(0, 3, shape).astype(dtype)
    bias = RNG.normal(0, 1, shape[-1]).astype(dtype) if with_bias else None
    plan, _, _ = check(fast_gelu, X=x, bias=bias)
    assert plan.variant == SHAPES[(shape, with_bias)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n,variant", [(4096, "vec4"), (4095, "scalar"), (1, "scalar")])
def test_gelu_variants_match_reference(gelu, dtype, n, variant):
    x = RNG.normal(0, 3, n).astype(dtype)
    plan, _, _ = check(gelu, X=x)
    assert plan.variant == variant


@pytest.mark.parametrize("n", [1, 2, 3, 5, 4097])
def test_vec4_tail_handles_every_remainder(fast_gelu, n):
    x = RNG.normal(0, 2, n).astype(np.float32)
    plan, _, _ = check(fast_gelu, X=x)
    assert plan.variant == "vec4_tail_no_bias"


@pytest.mark.parametrize("hidden", [1, 3, 5, 6, 7])
def test_bias_whose_length_is_not_a_multiple_of_four(fast_gelu, hidden):
    x = RNG.normal(0, 2, (9, hidden)).astype(np.float32)
    bias = RNG.normal(0, 2, hidden).astype(np.float32)
    plan, _, _ = check(fast_gelu, X=x, bias=bias)
    assert plan.variant == "vec4_tail_bias"


LARGE = {
    np.float32: [20, 88, 88.8, 100, 1e4, 1e20, 3e38, np.finfo(np.float32).max],
    np.float16: [10, 11, 12, 100, 1000, 65504],
}


@pytest.mark.parametrize("op", ["com.microsoft.FastGelu", "com.microsoft.Gelu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_large_magnitudes_give_finite_correct_values(device, op, dtype):
    mags = np.array(LARGE[dtype], dtype=np.float64)
    x = np.concatenate([mags, -mags, [0.0, -0.0]]).astype(dtype)
    for n in (len(x), 16):  # the scalar/tail path and the vec4 path
        xs = np.resize(x, n)
        _, run, _ = check(load_kernel(op, device=device, version=1), X=xs)
        assert np.isfinite(run.outputs["Y"]).all()


def test_two_dimensional_dispatch_is_correct(fast_gelu):
    profile = BASELINE.restricted("tiny-dispatch", limits={"maxComputeWorkgroupsPerDimension": 3})
    x = RNG.normal(0, 2, (7, 4 * 256 + 4)).astype(np.float32)  # 1796 vec4 threads: 8 workgroups of 256
    bias = RNG.normal(0, 1, x.shape[-1]).astype(np.float32)
    plan, run, _ = check(fast_gelu, profile, X=x, bias=bias)
    counts = plan.passes[0].dispatch.counts
    assert counts[1] > 1 and max(counts) <= 3 and counts[0] * counts[1] * counts[2] >= 8
    assert run.dispatched == [("FastGelu.vec4Bias", counts)]


@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0), (2, 0, 5)])
def test_empty_tensors_dispatch_nothing(fast_gelu, shape):
    x = np.zeros(shape, np.float32)
    plan, run = fast_gelu.run(X=x, verify=True)
    assert run.dispatched == []
    assert run.outputs["Y"].shape == shape and run.outputs["Y"].dtype == np.float32


def test_non_finite_inputs_leave_finite_elements_correct(gelu):
    x = RNG.normal(0, 2, 64).astype(np.float32)
    x[[3, 17, 40]] = [np.nan, np.inf, -np.inf]
    check(gelu, X=x)


def test_tanh_and_erf_paths_are_distinguished(fast_gelu, package_copy):
    """A FastGelu whose template computes erf GELU must fail the tanh reference at f32."""
    root = package_copy("com.microsoft.FastGelu")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["constants"]["approximate"] = '"erf"'
    (root / "manifest.json").write_text(json.dumps(manifest))
    swapped = load_kernel(root, device=fast_gelu.device)
    x = RNG.normal(0, 2, (16, 64)).astype(np.float32)
    y = swapped(X=x)["Y"]
    ref = reference_for("com.microsoft", "FastGelu")
    result = compare(y, ref.compute({"X": x})["Y"], ref.tolerance("float32"), inputs=x)
    assert not result.passed and result.worst_ratio > 10


@pytest.mark.parametrize("per_thread", [2, 4])
@pytest.mark.parametrize("op", ["com.microsoft.FastGelu", "com.microsoft.Gelu"])
def test_several_vec4_per_invocation_proposal_is_correct(device, tmp_path, op, per_thread):
    """The bench's proposed manifest change (vecPerThread) keeps every element right, including a partial last group."""
    from conformance.engine.package import REPO_SPECS
    from conformance.tools import proposal

    kernel = load_kernel(proposal.vec4_per_thread(REPO_SPECS / op, per_thread, tmp_path), device=device)
    for shape in [(4, 1024), (3, 4 * 256 * per_thread + 8)]:
        x = RNG.normal(0, 2, shape).astype(np.float32)
        extra = {"bias": RNG.normal(0, 1, shape[-1]).astype(np.float32)} if "Fast" in op else {}
        plan, run, _ = check(kernel, X=x, **extra)
        assert plan.variant.startswith("vec4") and plan.passes[0].constants["vecPerThread"] == per_thread
