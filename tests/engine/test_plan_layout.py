"""Dispatch geometry, tunables, device limits, uniform bytes, binding declarations and outputs.

Numbers worked out by hand from the manifests:
  FastGelu: workgroupSize = min(WORKGROUP_SIZE, maxComputeInvocationsPerWorkgroup, maxComputeWorkgroupSizeX);
            threads = numel/4 (vec4), ceilDiv(numel, 4) (tail), numel (scalar);
            dispatchFits: numel <= maxWorkgroupsPerDim^2 * workgroupSize * 4;
            buffersFit: every tensor's bytes <= min(maxStorageBufferBindingSize, maxBufferSize).
  Gelu:     workgroupSize = WORKGROUP_SIZE, unclamped; threads = numel/4 (vec4) or numel.
  workgroups = ceil(threads / workgroupSize), spread over (x, y, z) with each <= maxComputeWorkgroupsPerDimension.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import BASELINE, ContractError, NoVariantError
from tests.engine.conftest import FASTGELU, GELU

F32, F16 = "float32", "float16"

GRID4 = BASELINE.restricted("grid4", limits={"maxComputeWorkgroupsPerDimension": 4})
GRID2 = BASELINE.restricted("grid2", limits={"maxComputeWorkgroupsPerDimension": 2})
NARROW = BASELINE.restricted("narrow-x128", limits={"maxComputeWorkgroupSizeX": 128})
FEW_INVOCATIONS = BASELINE.restricted("invocations64", limits={"maxComputeInvocationsPerWorkgroup": 64})
SMALL_BINDING = BASELINE.restricted("binding1k", limits={"maxStorageBufferBindingSize": 1024})
SMALL_BUFFER = BASELINE.restricted("buffer1k", limits={"maxBufferSize": 1024})


def _kernel(request, op):
    return request.getfixturevalue("fastgelu" if op == FASTGELU else "gelu")


def _args(x, bias, dtype):
    args = {"X": (x, dtype)}
    if bias is not None:
        args["bias"] = (bias, dtype)
    return args


DISPATCH = [
    # (op, X, bias, profile, tunables, variant, threads, workgroup size, (x, y, z) workgroups)
    (FASTGELU, (2, 8), (8,), BASELINE, None, "vec4_bias", 4, 256, (1, 1, 1)),
    (FASTGELU, (4, 3), (3,), BASELINE, None, "vec4_tail_bias", 3, 256, (1, 1, 1)),  # ceilDiv(12, 4)
    (FASTGELU, (5,), None, BASELINE, None, "vec4_tail_no_bias", 2, 256, (1, 1, 1)),  # ceilDiv(5, 4)
    (FASTGELU, (0, 4), None, BASELINE, None, "scalar_no_bias", 0, 256, (0, 0, 0)),  # nothing to run
    (FASTGELU, (0, 4), (4,), BASELINE, None, "scalar_bias", 0, 256, (0, 0, 0)),
    (FASTGELU, (1024, 1024), None, BASELINE, None, "vec4_no_bias", 262144, 256, (1024, 1, 1)),
    (FASTGELU, (4097,), None, BASELINE, None, "vec4_tail_no_bias", 1025, 256, (5, 1, 1)),
    (GELU, (6,), None, BASELINE, None, "scalar", 6, 256, (1, 1, 1)),
    (GELU, (8,), None, BASELINE, None, "vec4", 2, 256, (1, 1, 1)),
    (GELU, (257,), None, BASELINE, None, "scalar", 257, 256, (2, 1, 1)),
    (GELU, (), None, BASELINE, None, "scalar", 1, 256, (1, 1, 1)),
    # y split: 2561 threads -> 11 workgroups, at most 4 per dimension -> 3 rows of 4
    (GELU, (2561,), None, GRID4, None, "scalar", 2561, 256, (4, 3, 1)),
    # FastGelu at dispatchFits' edge: 4*4*256*4 = 16384 elements -> 4096 threads -> 16 workgroups -> 4 x 4
    (FASTGELU, (16384,), None, GRID4, None, "vec4_no_bias", 4096, 256, (4, 4, 1)),
    (FASTGELU, (16383,), None, GRID4, None, "vec4_tail_no_bias", 4096, 256, (4, 4, 1)),
    (FASTGELU, (128, 128), (128,), GRID4, None, "vec4_bias", 4096, 256, (4, 4, 1)),
    # 2048 elements -> 512 threads -> 2 workgroups, fits x
    (GELU, (2048,), None, GRID2, None, "vec4", 512, 256, (2, 1, 1)),
    # z as well: 1025 threads -> 5 workgroups, at most 2 per dimension -> only 2 x 2 x 2 covers them
    (GELU, (1025,), None, GRID2, None, "scalar", 1025, 256, (2, 2, 2)),
    # tunables
    (FASTGELU, (1024,), None, BASELINE, {"WORKGROUP_SIZE": 64}, "vec4_no_bias", 256, 64, (4, 1, 1)),
    (FASTGELU, (2048,), None, BASELINE, {"WORKGROUP_SIZE": 100}, "vec4_no_bias", 512, 100, (6, 1, 1)),
    # deviceWorkgroupCap clamps the tunable: min(1024, 256, 256) = 256
    (FASTGELU, (1024,), None, BASELINE, {"WORKGROUP_SIZE": 1024}, "vec4_no_bias", 256, 256, (1, 1, 1)),
    # ... and the device limits clamp the default 256: maxComputeWorkgroupSizeX 128
    (FASTGELU, (2048,), None, NARROW, None, "vec4_no_bias", 512, 128, (4, 1, 1)),
    # ... maxComputeInvocationsPerWorkgroup 64
    (FASTGELU, (2048,), None, FEW_INVOCATIONS, None, "vec4_no_bias", 512, 64, (8, 1, 1)),
    # a tunable below the cap wins
    (FASTGELU, (2048,), None, NARROW, {"WORKGROUP_SIZE": 32}, "vec4_no_bias", 512, 32, (16, 1, 1)),
    (GELU, (8,), None, BASELINE, {"WORKGROUP_SIZE": 64}, "vec4", 2, 64, (1, 1, 1)),
    (GELU, (2048,), None, NARROW, {"WORKGROUP_SIZE": 128}, "vec4", 512, 128, (4, 1, 1)),
]


@pytest.mark.parametrize("op, x, bias, profile, tunables, variant, threads, wg, counts", DISPATCH)
def test_dispatch(request, op, x, bias, profile, tunables, variant, threads, wg, counts):
    plan = _kernel(request, op).plan(profile=profile, tunables=tunables, **_args(x, bias, F32))
    assert plan.variant == variant
    assert len(plan.passes) == 1
    d = plan.passes[0].dispatch
    assert (d.threads, d.workgroup_size, tuple(d.counts)) == (threads, wg, counts)


@pytest.mark.parametrize(
    "profile, tunables, limit",
    [
        (NARROW, None, "maxComputeWorkgroupSizeX"),  # Gelu's 256 is not clamped
        (FEW_INVOCATIONS, None, "maxComputeInvocationsPerWorkgroup"),
        (BASELINE, {"WORKGROUP_SIZE": 512}, "maxComputeWorkgroupSizeX"),  # 512 > 256 default
    ],
)
def test_gelu_workgroup_size_over_device_limit(gelu, profile, tunables, limit):
    with pytest.raises(ContractError) as info:
        gelu.plan(profile=profile, tunables=tunables, X=((64,), F32))
    assert not isinstance(info.value, NoVariantError)
    assert info.value.reason == "device-limit"
    assert limit in str(info.value)


def test_gelu_too_many_workgroups(gelu):
    # 2305 threads -> 10 workgroups; 2 x 2 x 2 = 8 is all a grid of 2 per dimension holds
    with pytest.raises(ContractError) as info:
        gelu.plan(profile=GRID2, X=((2305,), F32))
    assert info.value.reason == "device-limit"
    assert "maxComputeWorkgroupsPerDimension" in str(info.value)


def test_fastgelu_dispatch_fits_rejects(fastgelu):
    # dispatchFits on grid2: numel <= 2 * 2 * 256 * 4 = 4096
    assert fastgelu.plan(profile=GRID2, X=((4096,), F32)).variant == "vec4_no_bias"
    with pytest.raises(NoVariantError) as info:
        fastgelu.plan(profile=GRID2, X=((4100,), F32))
    assert "dispatchFits is false" in str(info.value)


# -- buffer sizes -------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", [SMALL_BINDING, SMALL_BUFFER])
def test_fastgelu_buffers_fit(fastgelu, profile):
    # storageBufferLimit = 1024 bytes: 256 f32 or 512 f16 elements fit exactly (<=), 512 f32 do not
    assert fastgelu.plan(profile=profile, X=((256,), F32)).variant == "vec4_no_bias"
    assert fastgelu.plan(profile=profile, X=((512,), F16)).variant == "vec4_no_bias"
    assert fastgelu.plan(profile=profile, X=((4, 64), F32), bias=((64,), F32)).variant == "vec4_bias"
    with pytest.raises(NoVariantError) as info:
        fastgelu.plan(profile=profile, X=((512,), F32))
    message = str(info.value)
    assert "baseOk is false: buffersFit is false" in message
    assert "= 2048" in message and "storageBufferLimit = 1024" in message


@pytest.mark.parametrize(
    "profile, limit", [(SMALL_BINDING, "maxStorageBufferBindingSize"), (SMALL_BUFFER, "maxBufferSize")]
)
def test_gelu_buffers_checked_by_planner(gelu, profile, limit):
    # Gelu's manifest has no size predicate: vec4 is selected, then the planner refuses x (2048 bytes)
    assert gelu.plan(profile=profile, X=((256,), F32)).variant == "vec4"
    with pytest.raises(ContractError) as info:
        gelu.plan(profile=profile, X=((512,), F32))
    assert not isinstance(info.value, NoVariantError)
    assert info.value.reason == "device-limit"
    assert limit in str(info.value) and "2048" in str(info.value)


# -- uniform bytes ------------------------------------------------------------------------------

UNIFORMS = [
    # (op, X, bias, count, little-endian u32 bytes)
    (FASTGELU, (2, 8), (8,), 4, b"\x04\x00\x00\x00"),  # vec4: numel / 4
    (FASTGELU, (4, 3), (3,), 12, b"\x0c\x00\x00\x00"),  # tail: numel
    (FASTGELU, (5,), None, 5, b"\x05\x00\x00\x00"),
    (FASTGELU, (0, 4), None, 0, b"\x00\x00\x00\x00"),
    (FASTGELU, (1000,), None, 250, b"\xfa\x00\x00\x00"),
    (GELU, (8,), None, 2, b"\x02\x00\x00\x00"),
    (GELU, (6,), None, 6, b"\x06\x00\x00\x00"),
    (GELU, (), None, 1, b"\x01\x00\x00\x00"),
    (GELU, (70000,), None, 17500, b"\x5c\x44\x00\x00"),  # 17500 = 0x445c
    (GELU, (70001,), None, 70001, b"\x71\x11\x01\x00"),  # 70001 = 0x11171
]


@pytest.mark.parametrize("op, x, bias, count, data", UNIFORMS)
def test_uniform_bytes(request, op, x, bias, count, data):
    plan = _kernel(request, op).plan(profile=BASELINE, **_args(x, bias, F32))
    params = plan.passes[0].bindings[-1]
    assert (params.name, params.buffer_type) == ("params", "uniform")
    assert params.index == (3 if bias is not None else 2)
    assert tuple(params.fields) == (("count", "u32", count),)
    assert params.uniform_bytes == data


# -- bindings -----------------------------------------------------------------------------------

DECLARATIONS = [
    (
        FASTGELU,
        (2, 8),
        (8,),
        F32,
        [
            "@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;",
            "@group(0) @binding(1) var<storage, read> bias: array<f32, 8>;",  # length: $hidden = last dim
            "@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;",
            "@group(0) @binding(3) var<uniform> params: Params;",
        ],
    ),
    (
        FASTGELU,
        (3, 4),
        (4,),
        F16,
        [
            "@group(0) @binding(0) var<storage, read> x: array<vec4<f16>>;",
            "@group(0) @binding(1) var<storage, read> bias: array<f16, 4>;",
            "@group(0) @binding(2) var<storage, read_write> y: array<vec4<f16>>;",
            "@group(0) @binding(3) var<uniform> params: Params;",
        ],
    ),
    # the scalarBias set has no length on bias
    (
        FASTGELU,
        (4, 3),
        (3,),
        F16,
        [
            "@group(0) @binding(0) var<storage, read> x: array<f16>;",
            "@group(0) @binding(1) var<storage, read> bias: array<f16>;",
            "@group(0) @binding(2) var<storage, read_write> y: array<f16>;",
            "@group(0) @binding(3) var<uniform> params: Params;",
        ],
    ),
    (
        FASTGELU,
        (8,),
        None,
        F32,
        [
            "@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;",
            "@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;",
            "@group(0) @binding(2) var<uniform> params: Params;",
        ],
    ),
    (
        GELU,
        (6,),
        None,
        F32,
        [
            "@group(0) @binding(0) var<storage, read> x: array<f32>;",
            "@group(0) @binding(1) var<storage, read_write> y: array<f32>;",
            "@group(0) @binding(2) var<uniform> params: Params;",
        ],
    ),
    (
        GELU,
        (4, 4),
        None,
        F16,
        [
            "@group(0) @binding(0) var<storage, read> x: array<vec4<f16>>;",
            "@group(0) @binding(1) var<storage, read_write> y: array<vec4<f16>>;",
            "@group(0) @binding(2) var<uniform> params: Params;",
        ],
    ),
]


@pytest.mark.parametrize("op, x, bias, dtype, expected", DECLARATIONS)
def test_binding_declarations(request, op, x, bias, dtype, expected):
    plan = _kernel(request, op).plan(profile=BASELINE, **_args(x, bias, dtype))
    assert [b.declaration for b in plan.passes[0].bindings] == expected


def test_binding_fields_vec4_bias(fastgelu):
    plan = fastgelu.plan(profile=BASELINE, X=((2, 8), F32), bias=((8,), F32))
    rows = [(b.index, b.name, b.buffer_type, b.element_type, b.length, b.arg) for b in plan.passes[0].bindings]
    assert rows == [
        (0, "x", "read-only-storage", "vec4<f32>", None, "X"),
        (1, "bias", "read-only-storage", "f32", 8, "bias"),
        (2, "y", "storage", "vec4<f32>", None, "Y"),
        (3, "params", "uniform", None, None, None),
    ]
    p = plan.passes[0]
    assert (p.id, p.name, p.shader) == ("main", "FastGelu.vec4Bias", "elementwise-bias-gelu.wgsl.jinja")
    # constants: top-level ones plus the variant's, $-references resolved
    assert p.constants["vectorScalar"] == "vec4<f32>"
    assert p.constants["hidden"] == 8
    assert p.constants["scalar"] == "f32"
    assert p.constants["usesF16"] is False
    assert p.constants["approximate"] == "tanh"


def test_gelu_constants(gelu):
    p = gelu.plan(profile=BASELINE, X=((8,), F16)).passes[0]
    assert p.constants["vec4"] is True and p.constants["hasBias"] is False
    assert p.constants["scalar"] == "f16" and p.constants["usesF16"] is True
    assert p.constants["approximate"] == "erf"


# -- outputs ------------------------------------------------------------------------------------

OUTPUTS = [
    (FASTGELU, (2, 3, 8), (8,), F16),
    (FASTGELU, (0, 4), None, F32),
    (FASTGELU, (5,), None, F32),
    (GELU, (), None, F32),
    (GELU, (0,), None, F16),
    (GELU, (7, 5), None, F32),
]


@pytest.mark.parametrize("op, x, bias, dtype", OUTPUTS)
def test_output_shape_and_dtype(request, op, x, bias, dtype):
    # both manifests: Y has X's shape (rank ranks.X) and X's type T
    plan = _kernel(request, op).plan(profile=BASELINE, **_args(x, bias, dtype))
    assert set(plan.outputs) == {"Y"}
    assert tuple(plan.outputs["Y"].shape) == x
    assert plan.outputs["Y"].dtype == dtype


# -- dispatch invariants over many sizes ----------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 200_000), per_dim=st.integers(1, 70), wg_size=st.sampled_from([1, 32, 64, 100, 256]))
def test_gelu_dispatch_covers_threads(gelu, n, per_dim, wg_size):
    profile = BASELINE.restricted(f"grid{per_dim}", limits={"maxComputeWorkgroupsPerDimension": per_dim})
    try:
        plan = gelu.plan(profile=profile, tunables={"WORKGROUP_SIZE": wg_size}, X=((n,), F32))
    except ContractError as exc:
        groups = math.ceil((n // 4 if n and n % 4 == 0 else n) / wg_size)
        assert exc.reason == "device-limit" and groups > per_dim**3
        return
    d = plan.passes[0].dispatch
    threads = n // 4 if plan.variant == "vec4" else n
    groups = math.ceil(threads / wg_size)
    assert d.threads == threads and d.workgroup_size == wg_size
    x, y, z = d.counts
    if groups == 0:
        assert (x, y, z) == (0, 0, 0)
        return
    assert 1 <= min(x, y, z) and max(x, y, z) <= per_dim
    assert x * y * z >= groups  # every thread has a workgroup
    assert (x * y * z - groups) < y * z  # and no whole x-row of workgroups is idle
    if groups <= per_dim:
        assert (y, z) == (1, 1)  # split only when needed
