"""wgpu-native through wgpu-py: the object model the suite is written against, as it is."""

from __future__ import annotations

import wgpu

from conformance.gpu.backends.cffi_types import install

install()


def enumerate_adapters() -> list:
    return list(wgpu.gpu.enumerate_adapters_sync())
