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


class SteppingClock:
    """A clock that moves ``step`` seconds at every reading: what a timer decides from it is the same on a fast,
    slow or busy machine."""

    def __init__(self, step: float):
        self.step, self.now, self.reads = step, 0.0, 0

    def __call__(self) -> float:
        self.now += self.step
        self.reads += 1
        return self.now
