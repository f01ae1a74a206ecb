import pytest

from conformance import load_kernel
from conformance.gpu.device import get_device


@pytest.fixture(scope="session")
def device():
    return get_device("vulkan")


@pytest.fixture(scope="session")
def fast_gelu(device):
    return load_kernel("com.microsoft.FastGelu", device=device, version=1)


@pytest.fixture(scope="session")
def gelu(device):
    return load_kernel("com.microsoft.Gelu", device=device, version=1)


