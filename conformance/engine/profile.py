"""Device profiles: the limits and features a plan is made for.

A profile comes from a real adapter (:func:`conformance.gpu.device.adapter_profile`)
or is written by hand; it may be stricter than the device it runs on (fewer
features, smaller limits).  Limit names are WebGPU's, in camelCase.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

#: WebGPU's default limits (the values every adapter must support), by camelCase name.
DEFAULT_LIMITS: dict[str, int] = {
    "maxTextureDimension1D": 8192,
    "maxTextureDimension2D": 8192,
    "maxTextureDimension3D": 2048,
    "maxTextureArrayLayers": 256,
    "maxBindGroups": 4,
    "maxBindGroupsPlusVertexBuffers": 24,
    "maxBindingsPerBindGroup": 1000,
    "maxDynamicUniformBuffersPerPipelineLayout": 8,
    "maxDynamicStorageBuffersPerPipelineLayout": 4,
    "maxSampledTexturesPerShaderStage": 16,
    "maxSamplersPerShaderStage": 16,
    "maxStorageBuffersPerShaderStage": 8,
    "maxStorageTexturesPerShaderStage": 4,
    "maxUniformBuffersPerShaderStage": 12,
    "maxUniformBufferBindingSize": 65536,
    "maxStorageBufferBindingSize": 134217728,
    "minUniformBufferOffsetAlignment": 256,
    "minStorageBufferOffsetAlignment": 256,
    "maxVertexBuffers": 8,
    "maxBufferSize": 268435456,
    "maxVertexAttributes": 16,
    "maxVertexBufferArrayStride": 2048,
    "maxInterStageShaderVariables": 16,
    "maxColorAttachments": 8,
    "maxColorAttachmentBytesPerSample": 32,
    "maxComputeWorkgroupStorageSize": 16384,
    "maxComputeInvocationsPerWorkgroup": 256,
    "maxComputeWorkgroupSizeX": 256,
    "maxComputeWorkgroupSizeY": 256,
    "maxComputeWorkgroupSizeZ": 64,
    "maxComputeWorkgroupsPerDimension": 65535,
}

LIMIT_NAMES = frozenset(DEFAULT_LIMITS)

#: Limits where a *smaller* value is the more permissive one.
ALIGNMENT_LIMITS = frozenset({"minUniformBufferOffsetAlignment", "minStorageBufferOffsetAlignment"})

KNOWN_FEATURES = frozenset(
    {
        "shader-f16",
        "timestamp-query",
        "subgroups",
        "float32-filterable",
        "depth-clip-control",
        "depth32float-stencil8",
        "texture-compression-bc",
        "texture-compression-etc2",
        "texture-compression-astc",
        "indirect-first-instance",
        "rg11b10ufloat-renderable",
        "bgra8unorm-storage",
        "clip-distances",
        "dual-source-blending",
        "float32-blendable",
    }
)


def camel_limit(name: str) -> str:
    """``max-storage-buffer-binding-size`` (wgpu-py) -> ``maxStorageBufferBindingSize``."""
    head, *rest = name.replace("_", "-").split("-")
    out = head + "".join(p[:1].upper() + p[1:] for p in rest)
    return (
        out.replace("Dimension1d", "Dimension1D")
        .replace("Dimension2d", "Dimension2D")
        .replace("Dimension3d", "Dimension3D")
    )


def kebab_limit(name: str) -> str:
    """``maxStorageBufferBindingSize`` -> ``max-storage-buffer-binding-size``."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not (name[i - 1].isdigit() and ch == "D"):
            out.append("-")
        out.append(ch.lower())
    return "".join(out)


@dataclass(frozen=True)
class DeviceProfile:
    """Limits (camelCase) and features a plan may assume."""

    name: str
    limits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    features: frozenset[str] = frozenset()

    def __post_init__(self):
        unknown = sorted(set(self.limits) - LIMIT_NAMES)
        if unknown:
            raise ValueError(f"profile {self.name!r}: unknown limit(s) {unknown}; known: {sorted(LIMIT_NAMES)}")
        for key, value in self.limits.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"profile {self.name!r}: limit {key} must be a non-negative integer, got {value!r}")
        object.__setattr__(self, "limits", {**DEFAULT_LIMITS, **self.limits})
        object.__setattr__(self, "features", frozenset(self.features))

    def restricted(
        self,
        name: str,
        *,
        limits: Mapping[str, int] | None = None,
        drop_features: frozenset[str] | set[str] = frozenset(),
    ) -> "DeviceProfile":
        """A stricter profile: some limits lowered, some features removed."""
        merged = dict(self.limits)
        for key, value in (limits or {}).items():
            merged[key] = value
        return replace(self, name=name, limits=merged, features=self.features - frozenset(drop_features))

    def exceeds(self, device: "DeviceProfile") -> list[str]:
        """What this profile assumes that ``device`` lacks (empty when it can run there)."""
        problems = [f"feature {f}" for f in sorted(self.features - device.features)]
        for key, value in self.limits.items():
            have = device.limits.get(key, DEFAULT_LIMITS[key])
            worse = value < have if key in ALIGNMENT_LIMITS else value > have
            if worse:
                problems.append(f"{key} {value} (device has {have})")
        return problems

    def within(self, device: "DeviceProfile") -> "DeviceProfile":
        """This profile cut down to what ``device`` has: the profile a call made for this one meets on ``device``
        (each limit the stricter of the two, the features both have)."""
        limits = {
            key: (max if key in ALIGNMENT_LIMITS else min)(value, device.limits.get(key, DEFAULT_LIMITS[key]))
            for key, value in self.limits.items()
        }
        return replace(
            self, name=f"{self.name} on {device.name}", limits=limits, features=self.features & device.features
        )

    def as_dict(self) -> dict:
        return {"name": self.name, "limits": dict(sorted(self.limits.items())), "features": sorted(self.features)}


#: A profile with WebGPU's default limits and shader-f16: what the cases assume unless they lower limits.
BASELINE = DeviceProfile("baseline", features=frozenset({"shader-f16"}))
