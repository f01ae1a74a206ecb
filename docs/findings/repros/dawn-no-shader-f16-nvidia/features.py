"""What wgpu-native (wgpu-py) and Dawn (dawn-python) offer on this machine's Vulkan adapters, shader-f16 first."""

import json
import os

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
import wgpu  # noqa: E402

for a in wgpu.gpu.enumerate_adapters_sync():
    print(
        json.dumps(
            {
                "via": "wgpu",
                "adapter": a.info["device"],
                "backend": a.info["backend_type"],
                "shaderF16": "shader-f16" in a.features,
                "features": sorted(a.features),
            }
        )
    )
try:
    import pydawn  # noqa: F401  (dawn-python)

    from conformance.gpu.backends.dawn import enumerate_adapters

    for a in enumerate_adapters():
        print(
            json.dumps(
                {
                    "via": "dawn-python",
                    "adapter": a.info.get("device"),
                    "backend": a.info.get("backend_type"),
                    "shaderF16": "shader-f16" in a.features,
                    "features": sorted(a.features),
                }
            )
        )
except ImportError as err:
    print(json.dumps({"via": "dawn-python", "error": str(err)}))
