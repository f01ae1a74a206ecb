"""research/rowops_sweep.py's configurations: a floor takes out exactly the per-element work it names, the
barrier-only floors keep exactly their barriers, the shape-constant configurations read no shape from the params
uniform, they and the one-lane finish of each reduction compute the shipped kernels' bits, and a tunables
configuration reaches the plan."""

import runpy
from pathlib import Path

import numpy as np
import pytest

from conformance import BASELINE
from conformance.engine.package import REPO_SPECS
from conformance.gpu import tuning
from conformance.gpu.kernel import Kernel
from conformance.shader.render import render

SWEEP = runpy.run_path(str(REPO_SPECS.parent / "research" / "rowops_sweep.py"))
ROW_OPS = SWEEP["ROW_OPS"]
GELU = ("com.microsoft.Gelu",)


def _kernel(device, tmp_path: Path, name: str, ops, index: int = 0) -> Kernel:
    return Kernel(SWEEP["packages"](name, tmp_path, ops)[index], device, tuned=False)


def _wgsl(kernel: Kernel, **args) -> str:
    plan = kernel.plan(profile=BASELINE, **args)
    return "".join(render(kernel.package, plan, p) for p in plan.passes)


def _barriers(kernel: Kernel, **args) -> int:
    return _wgsl(kernel, **args).count("workgroupBarrier()")


@pytest.mark.parametrize(
    "name,barriers", [("v2", 4), ("floor", 0), ("floor_sync1", 1), ("floor_sync2", 2), ("finish", 6)]
)
def test_each_row_op_configuration_keeps_only_its_barriers(device, tmp_path, name, barriers):
    for index, _ in enumerate(ROW_OPS):  # LayerNormalization, Softmax: two reductions (finish: three barriers each)
        kernel = _kernel(device, tmp_path / str(index), name, ROW_OPS, index)
        args = {"X": ((4, 64), "float32")}
        if kernel.manifest.name == "LayerNormalization":
            args["scale"] = ((64,), "float32")
        assert _barriers(kernel, **args) == barriers, kernel.manifest.name


#: cached rows of one vec4 a lane (5 x 768), of scalars (3 x 1023), of several rows a workgroup (64 x 64), of four
#: vec4 a lane (7 x 4096), looped rows (2 x 8192), and f16 rows of odd length, where LEN_CONFIGS keep the uniform
SHAPES = [
    ((5, 768), "float32"),
    ((3, 1023), "float32"),
    ((64, 64), "float32"),
    ((7, 4096), "float32"),
    ((2, 8192), "float32"),
    ((3, 1023), "float16"),
]


@pytest.mark.parametrize("shape,dtype", SHAPES)
def test_shape_constant_and_finish_configurations_compute_the_shipped_bits(device, tmp_path, shape, dtype):
    rng = np.random.default_rng(2)
    x, scale = rng.normal(size=shape).astype(dtype), rng.normal(size=shape[-1]).astype(dtype)
    shipped = [_kernel(device, tmp_path / "v2", "v2", ROW_OPS, i) for i in (0, 1)]
    expected = [shipped[0](X=x, scale=scale)["Y"], shipped[1](X=x)["Y"]]
    uniform_kept = dtype == "float16"  # a scalar f16 row of odd length: arrayLength would count its padding
    for name, ops in (("const", ROW_OPS), ("len", ROW_OPS[:1]), ("finish", ROW_OPS)):
        for index, op in enumerate(ops):
            kernel = _kernel(device, tmp_path / name / op, name, ops, index)
            args = {"X": (shape, dtype)} | ({"scale": ((shape[-1],), dtype)} if index == 0 else {})
            wgsl = _wgsl(kernel, **args)
            reads_params = name == "finish" or (name == "len" and uniform_kept)
            assert ("params.rows" in wgsl) == reads_params and ("params.items" in wgsl) == reads_params, (name, op)
            assert ("arrayLength(&scale)" in wgsl) == (name == "len" and not uniform_kept), (name, op)
            assert ("row_total" in wgsl) == (name == "finish"), (name, op)
            got = kernel(X=x, scale=scale)["Y"] if index == 0 else kernel(X=x)["Y"]
            np.testing.assert_array_equal(got, expected[index], err_msg=f"{name} {op}")


def test_the_softmax_floor_normalises_each_lane_alone_and_the_kernel_the_row(device, tmp_path):
    x = np.random.default_rng(0).normal(size=(4, 64)).astype(np.float32)
    row = _kernel(device, tmp_path / "v2", "v2", ROW_OPS, 1)(X=x)["Y"]
    floor = _kernel(device, tmp_path / "floor", "floor", ROW_OPS, 1)(X=x)["Y"]
    np.testing.assert_allclose(row.sum(axis=1), 1.0, rtol=1e-5)
    # vec4 rows of 16 lanes, one vec4 each: every lane's four elements sum to 1, the row to 16
    np.testing.assert_allclose(floor.reshape(4, 16, 4).sum(axis=2), 1.0, rtol=1e-5)


def test_the_gelu_floor_is_the_identity(device, tmp_path):
    x = np.random.default_rng(1).normal(size=(3, 1024)).astype(np.float32)
    np.testing.assert_array_equal(_kernel(device, tmp_path, "floor", GELU)(X=x)["Y"], x)
    assert not np.array_equal(_kernel(device, tmp_path / "v2", "v2", GELU)(X=x)["Y"], x)


def test_a_tunables_configuration_sizes_the_plan_whatever_the_devices_tuning_table(device, tmp_path, monkeypatch):
    wide = _kernel(device, tmp_path, "wg1024", ROW_OPS)
    assert wide.manifest.tunables["WORKGROUP_SIZE"] == 1024
    # a table entry for the shipped package (the H200's has 256 for every row op variant) does not apply
    monkeypatch.setattr(tuning, "lookup", lambda *args: {"WORKGROUP_SIZE": 256})
    assert (
        Kernel(wide.package, device)
        .plan(X=((2, 4096), "float32"), scale=((4096,), "float32"))
        .passes[0]
        .dispatch.workgroup_size
        == 256
    )
    plan = wide.plan(X=((2, 4096), "float32"), scale=((4096,), "float32"))  # the device's limits: 1024 lanes
    assert plan.passes[0].dispatch.workgroup_size == 1024  # 1024 vec4 a row, one each


def test_the_shift_configuration_takes_both_statistics_from_one_tree(device, tmp_path):
    """LayerNorm's cached rows reduce once (two barriers) and still normalise: within 1e-4 of float64 on rows of
    unit spread around an offset of 100 (the shifted sums cancel only where the row's first element is far out)."""
    kernel = _kernel(device, tmp_path, "shift", ROW_OPS[:1])
    assert _barriers(kernel, X=((4, 64), "float32"), scale=((64,), "float32")) == 2
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(6, 768)) + 100).astype(np.float32)
    scale = rng.normal(size=768).astype(np.float32)
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=-1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + 1e-5) * scale
    np.testing.assert_allclose(kernel(X=x, scale=scale)["Y"], expected, atol=1e-4)


@pytest.mark.parametrize("floor,sizing", sorted(SWEEP["FLOOR_SIZINGS"].items()))
def test_a_sizing_floor_plans_as_its_sizing_with_no_barrier(device, tmp_path, floor, sizing):
    for index, _ in enumerate(ROW_OPS):
        kernels = [_kernel(device, tmp_path / name / str(index), name, ROW_OPS, index) for name in (floor, sizing)]
        for shape in ((128, 768), (64, 64), (4, 4096)):
            args = {"X": (shape, "float32")} | ({"scale": ((shape[-1],), "float32")} if index == 0 else {})
            plans = [kernel.plan(**args) for kernel in kernels]
            assert [(p.constants, p.dispatch) for p in plans[0].passes] == [
                (p.constants, p.dispatch) for p in plans[1].passes
            ], (floor, shape)
        assert _barriers(kernels[0], **args) == 0
