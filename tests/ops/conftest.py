"""Shared fixtures for the row and broadcast ops (LayerNormalization, Softmax, Add): kernels on lavapipe,
the references, row data with a chosen |mean| / sigma, and a one-call check against the reference."""

from __future__ import annotations

import pathlib
import shutil
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from conformance import load_kernel  # noqa: E402
from conformance.engine.package import REPO_SPECS  # noqa: E402
from conformance.gpu.device import get_device  # noqa: E402
from reference import compare, reference_for  # noqa: E402

LAYERNORM, SOFTMAX, ADD = "com.microsoft.LayerNormalization", "com.microsoft.Softmax", "ai.onnx.Add"


@pytest.fixture(scope="session")
def device():
    return get_device("vulkan")


@pytest.fixture(scope="session")
def layernorm(device):
    """Version 1, whose sizing these tests pin (version 2 sizes from the row count too: tests/gate/test_versions.py)."""
    return load_kernel(LAYERNORM, device=device, version=1)


@pytest.fixture(scope="session")
def softmax_kernel(device):
    return load_kernel(SOFTMAX, device=device, version=1)


@pytest.fixture(scope="session")
def add_kernel(device):
    return load_kernel(ADD, device=device)


def ref_of(op: str):
    return reference_for(*op.rsplit(".", 1))


def run_and_compare(kernel, *, profile=None, tunables=None, attributes=None, **inputs):
    """Run ``kernel`` on ``inputs`` and compare every output with the reference; returns (plan, run, comparisons)."""
    attributes = dict(attributes or {})
    plan, run = kernel.run(profile, tunables, verify=True, **inputs, **attributes)
    assert all(run.guards_intact.values()), f"{plan.variant}: wrote past an output"
    assert all(run.inputs_intact.values()), f"{plan.variant}: modified an input"
    ref = ref_of(kernel.manifest.op_id)
    expected = ref.compute(inputs, attributes)
    results = {}
    for role, y in run.outputs.items():
        tol = ref.tolerance(str(y.dtype), inputs, attributes)
        results[role] = compare(y, expected[role], tol)
    return plan, run, results


def rows_with_ratio(rng, rows: int, n: int, ratio: float, dtype="float32") -> np.ndarray:
    """Rows of n values with |mean| / sigma = ratio exactly in float64 (before rounding to dtype), the sign of
    the mean random, sigma spread over four decades in f32 and within [0.01, 1] in f16 (so 1e4 sigma fits)."""
    z = rng.standard_normal((rows, n))
    if n > 1:
        z = (z - z.mean(axis=-1, keepdims=True)) / z.std(axis=-1, keepdims=True)
    sigma = 10.0 ** rng.uniform(-2, 2 if dtype == "float32" else 0, (rows, 1))
    mean = ratio * sigma * rng.choice([-1.0, 1.0], (rows, 1))
    return (mean + sigma * z).astype(dtype)


@pytest.fixture(scope="session")
def one_pass(tmp_path_factory, device):
    """The shipped template with the variance computed as E[x^2] - mean^2 (a modified copy in a temp dir)."""
    dst = tmp_path_factory.mktemp("one-pass") / LAYERNORM
    shutil.copytree(REPO_SPECS / LAYERNORM, dst)
    path = dst / "layer-norm.wgsl.jinja"
    text = path.read_text()
    changed = (
        text.replace('pairwise("d# * d#", ks)', 'pairwise("v# * v#", ks)')
        .replace('"square(load(base + j) - " ~ V ~ "(mean))"', '"square(load(base + j))"')
        .replace(
            "let rstd = inverseSqrt(partial[0] * params.invCols + params.epsilon);",
            "let rstd = inverseSqrt(max(partial[0] * params.invCols - mean * mean, 0.0) + params.epsilon);",
        )
    )
    assert changed.count("mean * mean") == 2 and "v0 * v0" not in text and 'pairwise("v# * v#", ks)' in changed
    path.write_text(changed)
    return load_kernel(dst, device=device)
