"""Big-endian arrays passed to a kernel (issue 11, item 6): converted by value, for every input, optional ones
included, never uploaded as raw bytes."""

from __future__ import annotations

import numpy as np
import pytest

from conformance import load_kernel


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_big_endian_inputs_and_bias_give_the_native_result(device, dtype):
    if dtype == "float16" and "shader-f16" not in device.profile.features:
        pytest.skip("no shader-f16")
    kernel = load_kernel("com.microsoft.FastGelu", device=device)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 8)).astype(dtype)
    bias = rng.normal(size=(8,)).astype(dtype)
    native = kernel(X=x, bias=bias)["Y"]
    swapped = {"X": x.astype(x.dtype.newbyteorder(">")), "bias": bias.astype(bias.dtype.newbyteorder(">"))}
    assert swapped["X"].dtype.byteorder == ">"
    for args in ({**swapped}, {"X": x, "bias": swapped["bias"]}, {"X": swapped["X"], "bias": bias}):
        np.testing.assert_array_equal(kernel(**args)["Y"], native)
    np.testing.assert_array_equal(kernel(X=swapped["X"][:, :5].copy())["Y"], kernel(X=x[:, :5].copy())["Y"])
