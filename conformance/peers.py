"""Peers timed in the same run as the bench: PyTorch's GELU on CUDA, and a CUDA device-to-device copy.

Each peer is reported as its kernel time divided by this project's kernel time
for the same package, dtype and shape (above 1: ours is faster).  Needs torch
with CUDA; otherwise says so and returns nothing.
"""

from __future__ import annotations

import math
import statistics


def _cuda_time(fn, reps: int = 20, warmup: int = 3) -> float:
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(samples)


def run_peers(result: dict, max_elements: int) -> list[dict]:
    try:
        import torch
    except ImportError:
        return [{"note": "torch is not installed: no peers timed"}]
    if not torch.cuda.is_available():
        return [{"note": "torch has no CUDA device: no peers timed"}]
    import torch.nn.functional as F
    out = []
    for row in result["rows"]:
        n = math.prod(row["shape"])
        if n < (1 << 20) or n > max_elements or n % 1024:
            continue
        dtype = {"float32": torch.float32, "float16": torch.float16}[row["dtype"]]
        x = torch.randn(row["shape"], device="cuda", dtype=dtype)
        b = torch.randn(row["shape"][-1], device="cuda", dtype=dtype)
        if row["package"].endswith("FastGelu"):
            fn = (lambda: F.gelu(x + b, approximate="tanh")) if row["bias"] else (lambda: F.gelu(x, approximate="tanh"))
            name = "torch gelu(x + b, tanh)" if row["bias"] else "torch gelu(x, tanh)"
        else:
            fn, name = (lambda: F.gelu(x)), "torch gelu(x) exact"
        copy = _cuda_time(lambda: x.clone())
        t = _cuda_time(fn)
        out.append({"package": row["package"], "variant": row["variant"], "dtype": row["dtype"], "elements": n,
                    "peer": name, "peer_seconds": t, "ours_seconds": row["seconds"],
                    "time_ratio_peer_over_ours": t / row["seconds"],
                    "cuda_copy_gbps": 2 * x.numel() * x.element_size() / copy / 1e9,
                    "ours_gbps": row["gbps"], "ours_vs_cuda_copy": row["gbps"] / (2 * x.numel() * x.element_size()
                                                                                  / copy / 1e9)})
    return out


def format_peers(rows: list[dict]) -> str:
    lines = ["peers (same run): time ratio peer/ours (>1: ours faster); ours vs CUDA copy bandwidth"]
    for r in rows:
        if "note" in r:
            lines.append(r["note"])
            continue
        lines.append(f"{r['package']:<24}{r['variant']:<16}{r['dtype']:<9}{r['elements']:>11} {r['peer']:<26}"
                     f"ratio {r['time_ratio_peer_over_ours']:.3f}  CUDA copy {r['cuda_copy_gbps']:.0f} GB/s  "
                     f"ours/CUDA-copy {r['ours_vs_cuda_copy']:.3f}")
    return "\n".join(lines)
