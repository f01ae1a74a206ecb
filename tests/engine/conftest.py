"""Shared fixtures for the manifest-engine tests (issue 2).

Every expectation in this folder is worked out by hand from the two manifests
under ``specs/``; the engine is only ever the thing under test.
"""

from __future__ import annotations

import copy
import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # pytest run without the repo root on sys.path
    sys.path.insert(0, str(ROOT))

from conformance import BASELINE, load_kernel  # noqa: E402
from conformance.engine.manifest import Manifest  # noqa: E402
from conformance.engine.package import Package  # noqa: E402
from conformance.gpu.kernel import Kernel  # noqa: E402

SPECS = ROOT / "specs"
FASTGELU = "com.microsoft.FastGelu"
GELU = "com.microsoft.Gelu"

#: BASELINE without shader-f16 (WebGPU defaults otherwise).
NO_F16 = BASELINE.restricted("no-f16", drop_features={"shader-f16"})


def _raw(name: str) -> dict:
    return json.loads((SPECS / name / "manifest.json").read_text(encoding="utf-8"))


_RAW = {FASTGELU: _raw(FASTGELU), GELU: _raw(GELU)}


@pytest.fixture(scope="session")
def fastgelu():
    return load_kernel(FASTGELU, version=1)


@pytest.fixture(scope="session")
def gelu():
    return load_kernel(GELU, version=1)


@pytest.fixture
def fastgelu_raw() -> dict:
    """A fresh, mutable copy of the FastGelu seed manifest."""
    return copy.deepcopy(_RAW[FASTGELU])


@pytest.fixture
def gelu_raw() -> dict:
    """A fresh, mutable copy of the Gelu seed manifest."""
    return copy.deepcopy(_RAW[GELU])


def kernel_from(raw: dict, file: str = "x.json") -> Kernel:
    """A kernel built from a manifest dict (validated as ``file``); plan() with an explicit profile needs no device."""
    return Kernel(Package(SPECS / FASTGELU, Manifest(raw, file=file)))


@pytest.fixture(scope="session")
def make_kernel():
    return kernel_from
