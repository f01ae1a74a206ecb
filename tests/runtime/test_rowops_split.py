"""research/rowops_split.py's kernel (a LayerNorm row over several workgroups, two dispatches) computes LayerNorm:
its H200 timings are of a correct kernel, in the accuracy class of version 2's two passes, whatever the split."""

import runpy

import numpy as np
import pytest

from conformance import load_kernel
from conformance.engine.package import REPO_SPECS

SPLIT = runpy.run_path(str(REPO_SPECS.parent / "research" / "rowops_split.py"))


@pytest.mark.parametrize("shape,chunks", [((1, 5, 768), 2), ((3, 4096), 2), ((3, 4096), 8), ((2, 1024), 4)])
def test_the_split_kernel_matches_the_float64_reference(device, shape, chunks):
    split = SPLIT["Split"].of(shape[-1], chunks)
    assert split.wg * split.per_thread * chunks >= shape[-1] // 4  # every vec4 of the row is some lane's
    x, scale, bias = SPLIT["inputs"](shape)
    x.reshape(-1, shape[-1])[0] += 1e4  # a row whose mean is 5,000 of its sigmas from 0: one pass would cancel
    kernel = SPLIT["SplitLayerNorm"](device, split, x, scale, bias, 1e-5)
    try:
        y = kernel.run()
    finally:
        kernel.release()
    want = SPLIT["reference"](x, scale, bias, 1e-5)
    shipped = load_kernel(REPO_SPECS / "com.microsoft.LayerNormalization@2", device=device)(
        X=x, scale=scale, bias=bias
    )["Y"]
    row_error = lambda y: np.abs(y - want).reshape(-1, shape[-1]).max(-1)  # noqa: E731
    # the shifted row's error is f32's own (about 1e-3 there, version 2's too); the others' a few ulp
    assert np.all(row_error(y) <= np.maximum(8 * row_error(shipped), 4e-6)), (row_error(y), row_error(shipped))


def test_a_row_that_does_not_split_into_whole_vec4_is_refused():
    with pytest.raises(ValueError, match="does not split into 3 chunks"):
        SPLIT["Split"].of(1024, 3)
