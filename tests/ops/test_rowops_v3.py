"""LayerNormalization@3 and Softmax@3 on lavapipe: one workgroup reduction per row (pairs merged by Chan's formula,
or online), held to the same tolerance and the same accuracy bars as the two-reduction versions."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conformance import load_kernel
from conformance.gpu.render import render

from .conftest import LAYERNORM, SOFTMAX, rows_with_ratio, run_and_compare

LENGTHS = (16, 255, 1024, 5003, 20000)   # vec4, scalar, vec4, looped, vec4_looped (several rows per group for 16)
VARIANTS = {"vec4", "scalar", "looped", "vec4_looped"}


@pytest.fixture(scope="module")
def v3(device):
    """Version 3 of both row ops, by op id."""
    return {op: load_kernel(op, device=device, version=3) for op in (LAYERNORM, SOFTMAX)}


def barriers(kernel, **inputs) -> int:
    plan = kernel.plan(**inputs)
    return sum(len(re.findall(r"\bworkgroupBarrier\(\)", render(kernel.package, plan, p))) for p in plan.passes)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_layernorm_v3_is_accepted_up_to_a_mean_of_1e4_sigma_in_every_variant(v3, dtype):
    seen = set()
    for n in LENGTHS:
        for ratio in (0, 1, 10, 100, 1e3, 1e4):
            rng = np.random.default_rng([n, int(ratio), dtype == "float16"])
            x = rows_with_ratio(rng, 8, n, ratio, dtype)
            plan, _, results = run_and_compare(v3[LAYERNORM], X=x, scale=rng.normal(1, 0.3, n).astype(dtype),
                                               bias=rng.normal(0, 1, n).astype(dtype))
            seen.add(plan.variant.removesuffix("_bias"))
            result = results["Y"]
            # the bars of the two-pass version's test (tests/ops/test_layernorm_kernel.py)
            assert result.passed and result.worst_ratio < (0.3 if dtype == "float32" else 0.6), \
                (n, ratio, plan.variant, result.message())
    assert seen == VARIANTS


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_softmax_v3_wide_rows_in_every_variant(v3, dtype):
    """Rows whose lanes' maxima differ by up to ~100 (sd 20): every lane's sum is rescaled on the way up."""
    seen = set()
    for n in LENGTHS:
        for sd in (1.0, 20.0):
            rng = np.random.default_rng([n, int(sd)])
            x = rng.normal(3, sd, (8, n)).astype(dtype)
            plan, _, results = run_and_compare(v3[SOFTMAX], X=x)
            seen.add(plan.variant)
            result = results["Y"]
            assert result.passed and result.worst_ratio < (0.3 if dtype == "float32" else 0.6), \
                (n, sd, plan.variant, result.message())
    assert seen == VARIANTS


def test_softmax_v3_row_whose_maximum_sits_in_one_lane(v3):
    """One large value per row, in a different lane each row: the other lanes' sums all underflow to 0 relative
    to it except where they hold it; the row is then [0, ..., 1, ..., 0] up to exp(-100)."""
    n, rows = 1024, 8
    x = np.zeros((rows, n), np.float32)
    x[np.arange(rows), np.arange(rows) * 131 % n] = 100.0
    plan, _, results = run_and_compare(v3[SOFTMAX], X=x)
    assert results["Y"].passed, results["Y"].message()


@pytest.mark.parametrize("op", [LAYERNORM, SOFTMAX])
@pytest.mark.parametrize("n", LENGTHS)
def test_v3_renders_one_reduction_per_row_v2_two(v3, device, op, n):
    """One reduction per row: 3 barriers (merge, merge, broadcast) where version 2 has 4, at the same plan."""
    v2 = load_kernel(op, device=device, version=2)
    x = np.zeros((8, n), np.float32)
    inputs = dict(X=x, scale=np.ones(n, np.float32)) if op == LAYERNORM else dict(X=x)
    assert v3[op].plan(**inputs).variant == v2.plan(**inputs).variant
    assert (barriers(v3[op], **inputs), barriers(v2, **inputs)) == (3, 4)
