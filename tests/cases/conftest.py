"""Shared fixtures: the repository's packages, generated once per session."""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cases  # noqa: E402
from conformance.engine.package import find_package_dirs, load_package  # noqa: E402
from conformance.engine.planner import Planner  # noqa: E402

PACKAGES = [d.name for d in find_package_dirs(ROOT / "specs")]


@pytest.fixture(scope="session", params=PACKAGES)
def package(request):
    return load_package(request.param)


@pytest.fixture(scope="session")
def generation(package):
    """The package's generated cases and the planner evaluations (plans and scopes) generating them took: one
    generation serves the tests of the cases and the bound on planner work (tests/cases/test_golden.py)."""
    counted = {"n": 0}
    with pytest.MonkeyPatch.context() as patch:
        for name in ("plan", "scope"):
            original = getattr(Planner, name)

            def counting(self, call, _original=original):
                counted["n"] += 1
                return _original(self, call)

            patch.setattr(Planner, name, counting)
        generated = cases.generate(package)
    return generated, counted["n"]


@pytest.fixture(scope="session")
def generated(generation):
    return generation[0]


@pytest.fixture(scope="session")
def report(package):
    return cases.coverage(package)


#: Limits of the case generator that the row and broadcast packages (LayerNormalization, Softmax, Add) expose;
#: reported, to be fixed in cases/. Strict xfails: a fix that closes one makes it fail here until it is removed.
#: (Add's residue pairs (numel % 4, last dim % 4), once a gap here, are now reached by the thresholds family.)
KNOWN_GAPS: dict[str, str] = {}
#: Non-strict xfails for timings: none now (generation is measured in CPU seconds against a budget, test_golden.py).
SLOW: dict[str, str] = {}


def pytest_collection_modifyitems(config, items):
    for item in items:
        for table, strict in ((KNOWN_GAPS, True), (SLOW, False)):
            reason = next((r for key, r in table.items() if item.nodeid.endswith("tests/cases/" + key)), None)
            if reason:
                item.add_marker(pytest.mark.xfail(reason=f"case generator: {reason}", strict=strict))
