"""Writes far past the end of an output are caught (issue 11, item 7): the guard after each output is
GUARD_RATIO times its size, between GUARD_MIN_BYTES and GUARD_MAX_BYTES (README, "Guards")."""

from __future__ import annotations

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from conformance.gpu.runtime import GUARD_MAX_BYTES, GUARD_MIN_BYTES, GUARD_RATIO, guard_bytes
from tests.hostile.conftest import TEMPLATE, edit

GELU = "com.microsoft.Gelu"


@pytest.mark.parametrize("elements, past", [(8, 64), (8, 4000), (8, GUARD_MIN_BYTES // 4 - 1), (4096, 3 * 4096 - 1)])
def test_a_write_far_past_the_end_is_caught(make_specs, device, elements, past):
    specs = make_specs(**{GELU: GELU})
    edit(
        specs / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count) { return; }\n"
        f"{{% if not vec4 %}}  if (i == 0u) {{ y[params.count + {past}u] = {{{{ scalar }}}}(1.0); }}\n{{% endif %}}",
    )
    kernel = load_kernel(specs / GELU, device=device)
    x = np.ones(elements + 1, dtype=np.float32)  # an odd count: the scalar variant
    plan, run = kernel.run(BASELINE, verify=True, X=x)
    assert plan.variant == "scalar"
    assert run.guards_intact == {"Y": False}, (elements, past)


def test_the_guard_is_proportional_and_capped():
    limits = {"maxBufferSize": 1 << 30, "maxStorageBufferBindingSize": 1 << 30}
    assert guard_bytes(32, limits) == GUARD_MIN_BYTES
    assert guard_bytes(1 << 20, limits) == GUARD_RATIO << 20
    assert guard_bytes(100 << 20, limits) == GUARD_MAX_BYTES
    assert guard_bytes((1 << 30) - 64, limits) == 64  # what room the device leaves
    assert guard_bytes(1 << 30, limits) == 0
