"""Repository-level pytest configuration.

The conformance plugin is registered by its ``pytest11`` entry point once the
project is installed; naming it here too lets ``pytest conformance/`` work from
a bare checkout. pytest registers a plugin module once, whichever way it came.
"""

pytest_plugins = ["conformance.plugin", "pytester"]  # pytester: the plugin's own tests (tests/plugin)

import pytest  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--run-packaging", action="store_true", default=False,
                     help="also run the tests marked packaging: build the wheel or a kernel repository's tool "
                          "chain in a scratch virtual environment (tens of seconds each)")


def pytest_configure(config):
    config.addinivalue_line("markers", "packaging: builds and installs the wheel in a scratch virtual environment "
                                       "(run with --run-packaging)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-packaging"):
        return
    skip = pytest.mark.skip(reason="builds and installs the wheel: run with --run-packaging")
    for item in items:
        if item.get_closest_marker("packaging"):
            item.add_marker(skip)
