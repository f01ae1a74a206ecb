"""A kernel that uses its outputs only in plain stores is run once, guarded; any other is run twice and compared
(conformance.gpu.kernel_view). The lexical check answers False for everything it does not recognise."""
from __future__ import annotations

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from conformance.gpu.kernel_view import stores_only

HEAD = ("struct Params { count: u32, }\n"
        "@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
        "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
        "@group(0) @binding(2) var<uniform> params: Params;\n")


def body(*lines: str) -> str:
    return HEAD + ("@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
                   "  let i = gid.x;\n  if (i >= params.count) { return; }\n" + "".join(f"  {s}\n" for s in lines)
                   + "}\n")


@pytest.mark.parametrize("lines", [
    ("y[i] = x[i];",),
    ("y[i] = x[i]; // y[i] += 1.0; arrayLength(&y)",),
    ("/* y[0] = y[1]; /* nested */ */ y[i] = 2.0 * x[i];",),
    ("let v = vec4<f32>(x[i]); y [ i ] = v.y;",),                  # a swizzle named like the output
    ("if (x[i] > 0.0) { y[i] = x[i]; } else { y[i] = 0.0; }",),
    ("for (var k = 0u; k < 2u; k++) { y[i * 2u + k] = x[k]; }",),
])
def test_plain_stores_only(lines):
    assert stores_only(body(*lines), frozenset({1}))


@pytest.mark.parametrize("lines", [
    ("y[i] = x[i];", "y[i] = y[i] * 2.0;"),                       # a load of an earlier store
    ("y[i] += x[i];",),                                          # compound
    ("y[i]++;",),
    ("if (arrayLength(&y) > params.count) { return; }", "y[i] = x[i];"),
    ("let p = &y; (*p)[i] = x[i];",),
    ("y[u32(y[0])] = x[i];",),                                   # the index reads the output
    ("_ = y[0]; y[i] = x[i];",),
    ("let y = 1.0;",),                                           # a shadowing name: not told apart
    ("y[i] = x[i]; /* unterminated",),
])
def test_anything_else_is_not(lines):
    assert not stores_only(body(*lines), frozenset({1}))


@pytest.mark.parametrize("wgsl", [
    HEAD.replace("@binding(1) var", "@binding(1 + 0) var") + "fn main() { y[0] = 1.0; }",   # not a literal
    HEAD + "@group(0) @binding(1) var<storage, read_write> z: array<f32>;\nfn main() { y[0] = 1.0; z[0] = 1.0; }",
    HEAD.replace("@binding(1)", "@binding(5)") + "fn main() { y[0] = 1.0; }",                # not declared
    HEAD.replace("@binding(1) var", "@binding(01) var") + "fn main() { y[0] = 1.0; }",       # no WGSL literal
])
def test_declarations_it_cannot_read_are_not(wgsl):
    assert not stores_only(wgsl, frozenset({1}))


def test_attributes_in_any_order_and_with_suffixes():
    wgsl = HEAD.replace("@group(0) @binding(1)", "@binding(1u) @group(0i)") + "fn main() { y[0] = 1.0; }"
    assert stores_only(wgsl, frozenset({1}))


def test_a_stores_only_kernel_runs_once_and_still_has_its_guard_checked(device):
    kernel = load_kernel("com.microsoft.Gelu", device=device)
    x = np.linspace(-3, 3, 4097, dtype=np.float32)
    before = (device.submissions, device.dispatches)
    plan, run = kernel.run(BASELINE, verify=True, X=x)
    assert (device.submissions - before[0], device.dispatches - before[1]) == (1, 1) and run.runs == 1
    assert run.guards_intact == {"Y": True} and run.inputs_intact == {"X": True} and run.identical == {"Y": True}
    assert run.dispatched == [(p.name, p.dispatch.counts) for p in plan.passes]
    np.testing.assert_array_equal(run.outputs["Y"], kernel(X=x)["Y"])
