"""--stress: the rewrite puts a delay before every workgroup access and barrier and permutes the local index; a
correct kernel computes bit-identically under it, and a planted missing barrier that passes a plain run fails."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conformance import load_kernel
from conformance.certify.checker import Checker
from conformance.certify.implementations import ImplResult, ManifestImplementation
from conformance.certify.outcomes import CaseFailed, verdict_for
from conformance.engine.package import REPO_SPECS, load_package
from conformance.shader import stress
from conformance.tools.mutate.mutants import package_mutants
from tests.conftest import UNUSED_PLUGINS, golden_cases

SOFTMAX = "com.microsoft.Softmax"
SHADER = """
var<workgroup> shared_sum: array<f32, 64>;
@group(0) @binding(0) var<storage, read_write> y: array<f32>;

fn helper(i: u32) -> f32 { return shared_sum[i]; }

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
  shared_sum[lid] = f32(lid); // a write
  workgroupBarrier();
  if (lid == 0u) {
    y[0] = 1.0;
  } else if (shared_sum[1] > 0.0) {
    y[lid] = helper(lid - 1u);
  }
  for (var k = 0u; k < 2u; k++) { y[lid] += shared_sum[k]; }
}
"""


def test_every_statement_touching_workgroup_memory_or_a_barrier_gets_a_delay():
    out = stress.rewrite(SHADER, 1)
    lines = [line.strip() for line in out.splitlines()]
    assert "fn helper(i: u32) -> f32 { conformance_stress_spin(0u); return shared_sum[i]; }" in lines
    assert "conformance_stress_spin(1u); shared_sum[lid] = f32(lid); // a write" in lines
    assert "conformance_stress_spin(2u); workgroupBarrier();" in lines
    assert "for (var k = 0u; k < 2u; k++) { conformance_stress_spin(3u); y[lid] += shared_sum[k]; }" in lines
    assert "} else if (shared_sum[1] > 0.0) {" in lines  # cannot be preceded: left as it was
    assert "var<workgroup> shared_sum: array<f32, 64>;" in lines  # module scope untouched
    assert out.count("conformance_stress_spin(") == 4 + 1  # four sites and the helper's definition


def test_the_local_index_is_permuted_by_a_bijection():
    out = stress.rewrite(SHADER, 1)
    assert "@builtin(local_invocation_index) conformance_stress_hw: u32" in out
    assert "let lid = conformance_stress_perm(conformance_stress_hw);" in out
    a, b = stress.permutation(64, 1)
    assert f"return (i * {a}u + {b}u) % 64u;" in out
    for size in (1, 2, 3, 32, 48, 96, 192, 256, 1024):
        for seed in range(1, 7):
            a, b = stress.permutation(size, seed)
            assert sorted((a * i + b) % size for i in range(size)) == list(range(size))
            assert size < 3 or [(a * i + b) % size for i in range(size)] != list(range(size))


def test_a_kernel_tied_to_hardware_lanes_gets_delays_only():
    tied = SHADER.replace(
        "fn main(@builtin(local_invocation_index) lid: u32)",
        "fn main(@builtin(local_invocation_index) lid: u32, @builtin(local_invocation_id) l3: vec3<u32>)",
    )
    out = stress.rewrite(tied, 2)
    assert "let lid = conformance_stress_hw;" in out and "conformance_stress_perm" not in out
    assert "conformance_stress_spin(2u); workgroupBarrier();" in out


def test_a_shader_without_workgroup_memory_is_unchanged_and_clashes_are_refused():
    plain = "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) { }\n"
    assert stress.rewrite(plain, 1) == plain
    assert stress.apply(SHADER, None) == SHADER
    with pytest.raises(stress.StressError, match="identifiers starting with 'conformance_stress_'"):
        stress.rewrite(SHADER.replace("shared_sum", "conformance_stress_x"), 1)
    with pytest.raises(stress.StressError, match="no @compute entry point"):
        stress.rewrite("var<workgroup> a: f32;\nfn f() { a = 1.0; }\n", 1)


def test_the_index_parameter_is_added_where_the_entry_point_has_none():
    shader = SHADER.replace(
        "fn main(@builtin(local_invocation_index) lid: u32)", "fn main(@builtin(workgroup_id) w: vec3<u32>)"
    ).replace("lid", "w.x")
    out = stress.rewrite(shader, 1)
    assert "fn main(@builtin(local_invocation_index) conformance_stress_hw: u32, @builtin(workgroup_id) w" in out


@pytest.fixture(scope="module")
def device():
    from conformance.gpu.device import get_device

    return get_device("vulkan")


def test_a_correct_kernel_computes_bit_identically_under_stress(device):
    kernel = load_kernel(SOFTMAX, device=device)
    x = np.random.default_rng(7).standard_normal((16, 253)).astype(np.float32)
    plain = kernel(X=x)["Y"]
    compiled = device.compilations
    for seed in (1, 2, 3):
        with stress.stressed(seed):
            assert np.array_equal(kernel(X=x)["Y"], plain)
    assert device.compilations == compiled + 3  # each seed's shader is its own (the rewrite was compiled)


def test_a_missing_barrier_that_passes_a_plain_run_fails_under_stress(device, tmp_path):
    """The barrier after the tree's stride-4 step removed: lavapipe runs a SIMD group's lanes in order, so the
    plain run reads the partner slot after its write; the permuted index puts the partners in other groups."""
    package = load_package(SOFTMAX)
    planted = next(m for m in package_mutants(package) if m.kind == "race" and "s != 4 " in m.new)
    copy = load_package(planted.materialize(package.root, tmp_path / package.root.name))
    case = next(c for c in golden_cases(SOFTMAX) if c.id == "Softmax/f32/X[8,512]/vec4#extremes0")
    impl = ManifestImplementation(device.backend, device.adapter_filter, device.webgpu)
    Checker(impl).check(case, copy, verdict_for(case))  # passes without --stress
    with pytest.raises(CaseFailed, match=r"under --stress seed \d: .*differs from the reference"):
        Checker(impl, stress_runs=3).check(case, copy, verdict_for(case))
    Checker(impl, stress_runs=3).check(case, package, verdict_for(case))  # the shipped kernel passes


class NumpySoftmax:
    """An implementation of Softmax (NumPy) whose summation order changes from one run to the next, as a kernel
    that sums in arrival order would: every run is within tolerance, the bits differ."""

    name, has_variants = "numpy-softmax-arrival-order", False

    def __init__(self):
        self.runs = 0

    def available(self):
        return None

    def prepare(self, package):
        return None

    def run(self, case, inputs):
        self.runs += 1
        x = inputs["X"].astype(np.float32)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        order = np.roll(np.arange(e.shape[-1]), self.runs)  # another order of the terms each run
        total = np.zeros(e.shape[:-1], np.float32)
        for j in order:
            total = total + e[..., j]
        return ImplResult({"Y": (e / total[..., None]).astype(np.float32)})


def test_outputs_that_differ_between_stressed_runs_fail_a_deterministic_op():
    package = load_package(SOFTMAX)
    case = next(c for c in golden_cases(SOFTMAX) if c.id == "Softmax/f32/X[64,36]/vec4#normal1")
    impl = NumpySoftmax()
    Checker(impl).check(case, package, verdict_for(case))  # one run: within tolerance
    with pytest.raises(CaseFailed, match=r"outputs of seed 2 differ from seed 1's \(Y\)"):
        Checker(impl, stress_runs=3).check(case, package, verdict_for(case))


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--impl", "onnxruntime-cpu", "--stress"],
            "--stress rewrites this project's rendered shaders: it applies to "
            "--impl manifest only, not onnxruntime-cpu",
        ),
        (["--stress=-2"], "--stress -2: expected the number of runs per case (1 or more)"),
    ],
)
def test_stress_options_that_cannot_apply_are_refused_by_name(args, message):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(REPO_SPECS.parent / "conformance" / "test_kernels.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
            "--device=vulkan",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_SPECS.parent,
    )
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr
