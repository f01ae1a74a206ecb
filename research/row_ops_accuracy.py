"""The accuracy figures of reference/README.md ("Row reductions", "Add"), measured on a device.

    PYTHONPATH=. python3 research/row_ops_accuracy.py [--device vulkan]

Part 1: per op, dtype and variant, the worst |error| and |error| / allowed over several shapes (odd rows, rows
longer than the workgroup, every variant) with normal data (mean 3, sd 2; softmax also sd 20).
Part 2: LayerNormalization's two-pass kernel against a one-pass E[x^2] - mean^2 copy of its template, worst
|error| / allowed per row length and |mean| / sigma (> 1 is rejected).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance import load_kernel  # noqa: E402
from conformance.engine.package import REPO_SPECS  # noqa: E402
from conformance.gpu.device import get_device  # noqa: E402
from reference import compare, reference_for  # noqa: E402

RATIOS = (0, 1, 10, 100, 1e3, 1e4)
LENGTHS = (16, 255, 1024, 5003, 20000)


def rows_with_ratio(rng, rows, n, ratio, dtype):
    """|mean| / sigma = ratio; sigma over four decades in f32, within [0.01, 1] in f16 (so 1e4 sigma fits)."""
    z = rng.standard_normal((rows, n))
    if n > 1:
        z = (z - z.mean(-1, keepdims=True)) / z.std(-1, keepdims=True)
    sigma = 10.0 ** rng.uniform(-2, 2 if dtype == "float32" else 0, (rows, 1))
    return (ratio * sigma * rng.choice([-1.0, 1.0], (rows, 1)) + sigma * z).astype(dtype)


def worst(kernel, inputs):
    ref = reference_for(*kernel.manifest.op_id.rsplit(".", 1))
    plan, run = kernel.run(**inputs)
    expected = ref.compute(inputs)
    out = {}
    for role, y in run.outputs.items():
        c = compare(y, expected[role], ref.tolerance(str(y.dtype), inputs))
        ok = ~np.isnan(expected[role])
        err = float(np.abs(y.astype(np.float64)[ok] - expected[role][ok]).max()) if ok.any() else 0.0
        out = (plan.variant, c.worst_ratio, err)
    return out


def one_pass_copy(device):
    dst = Path(tempfile.mkdtemp()) / "com.microsoft.LayerNormalization"
    shutil.copytree(REPO_SPECS / "com.microsoft.LayerNormalization", dst)
    path = dst / "layer-norm.wgsl.jinja"
    path.write_text(
        path.read_text()
        .replace('rows.pairwise("d# * d#", ks)', 'rows.pairwise("v# * v#", ks)')
        .replace('"square(load(base + j) - " ~ V ~ "(mean))"', '"square(load(base + j))"')
        .replace(
            "let rstd = inverseSqrt(partial[0] * params.invCols + params.epsilon);",
            "let rstd = inverseSqrt(max(partial[0] * params.invCols - mean * mean, 0.0) + params.epsilon);",
        )
    )
    return load_kernel(dst, device=device)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="vulkan")
    args = ap.parse_args()
    device = get_device(args.device)
    ln = load_kernel("com.microsoft.LayerNormalization", device=device)
    sm = load_kernel("com.microsoft.Softmax", device=device)
    add = load_kernel("ai.onnx.Add", device=device)
    table = defaultdict(lambda: [0.0, 0.0, 0])
    rng = np.random.default_rng(0)
    shapes = ((64, 1), (16, 7), (16, 8), (8, 255), (8, 768), (4, 1000), (4, 4096), (2, 4100), (2, 5003), (2, 20000))
    for dtype in ("float32", "float16"):
        for rows, n in shapes:
            x = rng.normal(3, 2, (rows, n)).astype(dtype)
            g, b = rng.normal(1, 0.5, n).astype(dtype), rng.normal(0, 1, n).astype(dtype)
            runs = [
                (ln, dict(X=x, scale=g, bias=b)),
                (ln, dict(X=x, scale=g)),
                (sm, dict(X=x)),
                (sm, dict(X=(x * 10).astype(dtype))),
                (add, dict(A=x, B=x[::-1].copy())),
                (add, dict(A=x, B=b)),
                (add, dict(A=x, B=b[:1].reshape(()))),
            ]
            for kernel, inputs in runs:
                variant, ratio, err = worst(kernel, inputs)
                cell = table[(kernel.manifest.name, dtype, variant)]
                cell[0], cell[1], cell[2] = max(cell[0], ratio), max(cell[1], err), cell[2] + 1
    print(f"device: {device.summary['adapter']}")
    print(f"{'op':<20}{'dtype':<9}{'variant':<18}{'runs':>5}{'max |err|':>12}{'max err/allowed':>17}")
    for (op, dtype, variant), (ratio, err, runs) in sorted(table.items()):
        print(f"{op:<20}{dtype:<9}{variant:<18}{runs:>5}{err:>12.3g}{ratio:>17.3f}")
    one = one_pass_copy(device)
    for dtype in ("float32", "float16"):
        print(f"\nLayerNormalization {dtype}, worst err/allowed over 8 rows: two-pass / one-pass")
        print("n \\ |mean|/sigma " + "".join(f"{r:>16g}" for r in RATIOS))
        for n in LENGTHS:
            cells = []
            for r in RATIOS:
                rng = np.random.default_rng([n, int(r)])
                inputs = dict(
                    X=rows_with_ratio(rng, 8, n, r, dtype),
                    scale=rng.normal(1, 0.3, n).astype(dtype),
                    bias=rng.normal(0, 1, n).astype(dtype),
                )
                cells.append(f"{worst(ln, inputs)[1]:.3f} / {worst(one, inputs)[1]:<7.3g}")
            print(f"{n:<17}" + "".join(f"{c:>16}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
