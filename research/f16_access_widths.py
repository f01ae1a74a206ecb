"""Why packed f16: the bandwidth of an f16 -> f32 -> f16 copy kernel by access width, against the copy shader.

Each kernel moves the same N f16 values through f32 and back, with no other arithmetic, so the
only difference is how a thread loads and stores them. Ratios are to the bench's vec4<u32> copy
shader on the same buffers, timed interleaved (conformance.bench.Baselines).

    python research/f16_access_widths.py [ELEMENTS]   # default 64 Mi (needs a 128 MiB storage binding)

Measured on the H200 with these kernels (a lab version of this script that timed kernel and copy one
after the other; 64 Mi / 256 Mi elements): vec4<f16> 0.90-0.91 / 0.89, two strided vec4<f16>
0.91 / 0.90, two adjacent vec4<f16> 0.69 / 0.68, mat2x4<f16> 0.69 / 0.68, vec4<u32> +
unpack2x16float 1.00-1.01 / 1.00. The same access widths carry GELU: docs/bench/README.md.
"f16 (2-byte accesses)" is the only access an f16 row of odd length allows (each row starts at an odd
element): the bound for LayerNormalization and Softmax on such rows (not yet run on the H200).
"""

from __future__ import annotations

import sys

import numpy as np

HEAD = """enable f16;
struct Params {{ count: u32 }}
@group(0) @binding(0) var<storage, read> x: array<{t}>;
@group(0) @binding(1) var<storage, read_write> y: array<{t}>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * 256u + lid;
"""
KERNELS = {  # name: (array element type, f16 per invocation, body)
    "f16 (2-byte accesses)": ("f16", 1, "if (i < params.count) { y[i] = f16(f32(x[i])); }"),
    "vec4<f16>": ("vec4<f16>", 4, "if (i < params.count) { y[i] = vec4<f16>(vec4<f32>(x[i])); }"),
    "two strided vec4<f16>": (
        "vec4<f16>",
        8,
        """let j = (i / 256u) * 512u + i % 256u;
  if (j < params.count) { y[j] = vec4<f16>(vec4<f32>(x[j])); }
  if (j + 256u < params.count) { y[j + 256u] = vec4<f16>(vec4<f32>(x[j + 256u])); }""",
    ),
    "two adjacent vec4<f16>": (
        "vec4<f16>",
        8,
        """if (2u * i + 1u < params.count) {
    let a = x[2u * i]; let b = x[2u * i + 1u];
    y[2u * i] = vec4<f16>(vec4<f32>(a)); y[2u * i + 1u] = vec4<f16>(vec4<f32>(b)); }""",
    ),
    "mat2x4<f16>": (
        "mat2x4<f16>",
        8,
        """if (i < params.count) { let m = x[i];
    y[i] = mat2x4<f16>(vec4<f16>(vec4<f32>(m[0])), vec4<f16>(vec4<f32>(m[1]))); }""",
    ),
    "vec4<u32> + unpack2x16float": (
        "vec4<u32>",
        8,
        """if (i < params.count) { let w = x[i];
    let lo = vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
    let hi = vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
    y[i] = vec4<u32>(pack2x16float(lo.xy), pack2x16float(lo.zw), pack2x16float(hi.xy), pack2x16float(hi.zw)); }""",
    ),
}


def main(n: int) -> None:
    import wgpu

    from conformance.engine.layout import split_workgroups
    from conformance.gpu.device import get_device
    from conformance.gpu.timing import Timer
    from conformance.tools.bench import Baselines

    dev = get_device("vulkan")
    d, usage = dev.device, wgpu.BufferUsage
    timer = Timer(dev, reps=20)
    baselines = Baselines(dev, timer)
    data = np.random.default_rng(0).normal(0, 2, n).astype(np.float16)
    x = d.create_buffer_with_data(data=data, usage=usage.STORAGE | usage.COPY_SRC)
    y = d.create_buffer(size=data.nbytes, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
    for name, (element, per_invocation, body) in KERNELS.items():
        count = n // {"mat2x4<f16>": 8, "vec4<u32>": 8, "f16": 1}.get(element, 4)  # array elements
        params = d.create_buffer_with_data(data=np.array([count, 0, 0, 0], np.uint32), usage=usage.UNIFORM)
        module = d.create_shader_module(code=HEAD.format(t=element) + "  " + body + "\n}\n")
        pipeline = d.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        group = d.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": i, "resource": {"buffer": b}} for i, b in enumerate((x, y, params))],
        )
        counts = split_workgroups(
            -(-n // per_invocation // 256), dev.profile.limits["maxComputeWorkgroupsPerDimension"]
        )

        def record(cpass, pipeline=pipeline, group=group, counts=counts):
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*counts)

        kernel, copy = timer.time_passes([record, baselines.shader_pass(x, y, data.nbytes)])
        print(
            f"{name:<30} {2 * data.nbytes / kernel.median / 1e9:8.1f} GB/s   "
            f"ratio to the copy shader {copy.median / kernel.median:.3f}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 26)
