"""webgpu-kernel-conformance: plan, run and certify declaratively specified WebGPU kernels."""

from conformance.errors import (ConformanceError, ContractError, DeviceError, ExpressionError, KernelRuntimeError,
                     ManifestError, NoVariantError, TemplateError)
from conformance.gpu.kernel import Kernel, load_kernel
from conformance.engine.profile import BASELINE, DeviceProfile

__all__ = ["load_kernel", "Kernel", "ContractError", "NoVariantError", "ManifestError", "ExpressionError",
           "TemplateError", "KernelRuntimeError", "DeviceError", "ConformanceError", "DeviceProfile", "BASELINE"]
