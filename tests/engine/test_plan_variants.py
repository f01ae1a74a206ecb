"""Variant selection and contract checks, with expectations read off the manifests by hand.

FastGelu (priority order): vec4_bias 30, vec4_no_bias 25, vec4_tail_bias 20,
vec4_tail_no_bias 15, scalar_bias 10, scalar_no_bias 0, where
  baseOk   = workgroupSize > 0, ranks.X >= 1, f16Ok(T), buffers fit, dispatch fits
  biasOk   = bias present, rank 1, len(bias) == last dim of X
  vec4Ok   = numel(X) > 0, numel(X) % 4 == 0, last dim of X % 4 == 0
  tail     = numel(X) > 0
Gelu: vec4 20 (f16Ok, numel > 0, numel % 4 == 0 -- the last dim is NOT checked),
scalar 0 (f16Ok only; rank 0 is fine).
"""

from __future__ import annotations

import numpy as np
import pytest

from conformance import BASELINE, ContractError, NoVariantError
from tests.engine.conftest import FASTGELU, GELU, NO_F16

F32, F16 = "float32", "float16"

FASTGELU_VARIANTS = [
    "vec4_bias",
    "vec4_no_bias",
    "vec4_tail_bias",
    "vec4_tail_no_bias",
    "scalar_bias",
    "scalar_no_bias",
]
GELU_VARIANTS = ["vec4", "scalar"]


def _kernel(request, op):
    return request.getfixturevalue("fastgelu" if op == FASTGELU else "gelu")


SELECTION = [
    # (op, X shape, bias shape or None, dtype, profile, expected variant)
    (FASTGELU, (2, 8), (8,), F32, BASELINE, "vec4_bias"),
    # numel 12 is a multiple of 4, but the last dim (3) is not: vec4Ok fails
    (FASTGELU, (4, 3), (3,), F32, BASELINE, "vec4_tail_bias"),
    (FASTGELU, (5,), None, F32, BASELINE, "vec4_tail_no_bias"),
    # numel 0: vec4Ok and the tail variants' "numel > 0" fail; scalar accepts
    (FASTGELU, (0, 4), None, F32, BASELINE, "scalar_no_bias"),
    (FASTGELU, (8,), None, F32, BASELINE, "vec4_no_bias"),
    (FASTGELU, (0, 4), (4,), F32, BASELINE, "scalar_bias"),
    # empty last dim and empty bias: biasOk holds (0 == 0), nothing else does
    (FASTGELU, (3, 0), (0,), F32, BASELINE, "scalar_bias"),
    (FASTGELU, (2, 3, 8), (8,), F16, BASELINE, "vec4_bias"),
    (FASTGELU, (4, 3), (3,), F16, BASELINE, "vec4_tail_bias"),
    # numel 12 % 4 == 0 but last dim 2 % 4 != 0
    (FASTGELU, (6, 2), None, F32, BASELINE, "vec4_tail_no_bias"),
    (FASTGELU, (2, 6), (6,), F32, BASELINE, "vec4_tail_bias"),
    (FASTGELU, (1,), None, F32, BASELINE, "vec4_tail_no_bias"),
    (FASTGELU, (1, 1, 1, 4), (4,), F32, BASELINE, "vec4_bias"),
    (FASTGELU, (4,), None, F16, BASELINE, "vec4_no_bias"),
    (FASTGELU, (3,), (3,), F16, BASELINE, "vec4_tail_bias"),
    # f16Ok(f32) is true whatever the features
    (FASTGELU, (2, 8), (8,), F32, NO_F16, "vec4_bias"),
    (FASTGELU, (7,), None, F32, NO_F16, "vec4_tail_no_bias"),
    (GELU, (6,), None, F32, BASELINE, "scalar"),
    (GELU, (8,), None, F32, BASELINE, "vec4"),
    (GELU, (0,), None, F32, BASELINE, "scalar"),
    # rank 0: numel is 1, Gelu has no rank predicate
    (GELU, (), None, F32, BASELINE, "scalar"),
    # Gelu looks only at numel: [2,2] and [4,3] are vec4 even though the last dim is not a multiple of 4
    (GELU, (2, 2), None, F32, BASELINE, "vec4"),
    (GELU, (4, 3), None, F32, BASELINE, "vec4"),
    (GELU, (3, 4), None, F16, BASELINE, "vec4"),
    (GELU, (1,), None, F16, BASELINE, "scalar"),
    (GELU, (2, 0, 4), None, F32, BASELINE, "scalar"),
    (GELU, (7, 5), None, F32, BASELINE, "scalar"),
    (GELU, (16,), None, F32, NO_F16, "vec4"),
]


@pytest.mark.parametrize(
    "op, x, bias, dtype, profile, expected",
    SELECTION,
    ids=[
        f"{op.split('.')[-1]}-{list(x)}-{list(b) if b else 'nobias'}-{dt}-{p.name}-{e}"
        for op, x, b, dt, p, e in SELECTION
    ],
)
def test_selected_variant(request, op, x, bias, dtype, profile, expected):
    k = _kernel(request, op)
    args = {"X": (x, dtype)}
    if bias is not None:
        args["bias"] = (bias, dtype)
    assert k.plan(profile=profile, **args).variant == expected


def test_bias_none_is_absent(fastgelu):
    assert fastgelu.plan(profile=BASELINE, X=((4, 8), F32), bias=None).variant == "vec4_no_bias"


def test_numpy_arrays_are_calls(fastgelu, gelu):
    x = np.zeros((2, 4), np.float32)
    assert fastgelu.plan(profile=BASELINE, X=x, bias=np.zeros(4, np.float32)).variant == "vec4_bias"
    assert gelu.plan(profile=BASELINE, X=np.zeros((3,), np.float16)).variant == "scalar"


# -- no variant ---------------------------------------------------------------------------------

NO_VARIANT = [
    # (op, args, profile, substrings the message must contain)
    (FASTGELU, {"X": ((4, 8), F16)}, NO_F16, ["baseOk is false", "f16Ok(dtypes.T) = false", 'dtypes.T = "f16"']),
    (FASTGELU, {"X": ((4, 8), F16), "bias": ((8,), F16)}, NO_F16, ["baseOk is false", "f16Ok(dtypes.T) = false"]),
    (GELU, {"X": ((8,), F16)}, NO_F16, ["vec4: f16Ok(dtypes.T) is false", "scalar: f16Ok(dtypes.T) is false"]),
    # bias of rank 2: the manifest's biasOk checks ranks.bias == 1
    (
        FASTGELU,
        {"X": ((4, 8), F32), "bias": ((1, 8), F32)},
        BASELINE,
        [
            "vec4_bias: biasOk is false: ranks.bias = 2",
            "scalar_bias: biasOk is false: ranks.bias = 2",
            "scalar_no_bias: noBiasOk is false: present.bias = true",
        ],
    ),
    # bias of the wrong length
    (
        FASTGELU,
        {"X": ((4, 3), F32), "bias": ((5,), F32)},
        BASELINE,
        [
            "vec4_bias: biasOk is false: dim(shapes.bias, 0) = 5, dim(shapes.X, ranks.X - 1) = 3",
            "vec4_tail_bias: biasOk is false: dim(shapes.bias, 0) = 5, dim(shapes.X, ranks.X - 1) = 3",
        ],
    ),
    (
        FASTGELU,
        {"X": ((2, 8), F16), "bias": ((2,), F16)},
        BASELINE,
        ["biasOk is false: dim(shapes.bias, 0) = 2, dim(shapes.X, ranks.X - 1) = 8"],
    ),
    # rank-0 X: baseOk requires ranks.X >= 1
    (FASTGELU, {"X": ((), F32)}, BASELINE, ["baseOk is false: ranks.X = 0"]),
    (FASTGELU, {"X": ((), F32), "bias": ((1,), F32)}, BASELINE, ["vec4_bias: baseOk is false: ranks.X = 0"]),
    # WORKGROUP_SIZE 0 makes workgroupSize 0: baseOk's first conjunct
    (FASTGELU, {"X": ((8,), F32), "tunables": {"WORKGROUP_SIZE": 0}}, BASELINE, ["baseOk is false: workgroupSize = 0"]),
]


@pytest.mark.parametrize("op, args, profile, expected", NO_VARIANT)
def test_no_variant(request, op, args, profile, expected):
    k = _kernel(request, op)
    with pytest.raises(NoVariantError) as info:
        k.plan(profile=profile, **args)
    err = info.value
    assert isinstance(err, ContractError) and err.reason == "no-variant"
    message = str(err)
    for text in expected:
        assert text in message
    every = FASTGELU_VARIANTS if op == FASTGELU else GELU_VARIANTS
    assert set(err.failures) == set(every)
    for vid in every:  # each variant is listed with its first false predicate
        assert f"{vid}: " in message


def test_bias_rank_two_names_bias(fastgelu):
    with pytest.raises(ContractError) as info:
        fastgelu.plan(profile=BASELINE, X=((4, 8), F32), bias=((1, 8), F32))
    assert info.value.argument == "bias"
    assert "rank 2" in str(info.value)


# -- contract errors before selection -----------------------------------------------------------

CONTRACT = [
    # (op, args, reason, argument)
    (GELU, {"X": ((4,), "float64")}, "dtype", "X"),
    (FASTGELU, {"X": ((4,), "float64")}, "dtype", "X"),
    (FASTGELU, {"X": ((4,), F32), "bias": ((4,), "float64")}, "dtype", "bias"),
    (GELU, {"X": ((4,), "int32")}, "dtype", "X"),
    (GELU, {"X": ((4,), "float8")}, "dtype", "X"),  # not a dtype at all
    (FASTGELU, {"X": ((4,), F32), "bias": ((4,), F16)}, "mixed-dtype", "bias"),
    (FASTGELU, {"X": ((4,), F16), "bias": ((4,), F32)}, "mixed-dtype", "bias"),
    (FASTGELU, {"bias": ((4,), F32)}, "missing-input", "X"),
    (GELU, {}, "missing-input", "X"),
    (GELU, {"X": ((4,), F32), "bias": ((4,), F32)}, "unknown-argument", "bias"),  # Gelu has no bias
    (FASTGELU, {"X": ((4,), F32), "Z": ((4,), F32)}, "unknown-argument", "Z"),
    (FASTGELU, {"X": ((4,), F32), "Y": ((4,), F32)}, "unknown-argument", "Y"),  # outputs are not passed
    (GELU, {"X": ((4, -1), F32)}, "shape", "X"),
    (FASTGELU, {"X": ((8,), F32), "tunables": {"NOPE": 1}}, "tunable", "NOPE"),
]


@pytest.mark.parametrize("op, args, reason, argument", CONTRACT)
def test_contract_error(request, op, args, reason, argument):
    k = _kernel(request, op)
    with pytest.raises(ContractError) as info:
        k.plan(profile=BASELINE, **args)
    assert not isinstance(info.value, NoVariantError)
    assert info.value.reason == reason
    assert info.value.argument == argument
    assert argument in str(info.value)
