"""Repository-level pytest configuration.

The conformance plugin is registered by its ``pytest11`` entry point once the
project is installed; naming it here too lets ``pytest conformance/`` work from
a bare checkout. pytest registers a plugin module once, whichever way it came.
"""

pytest_plugins = ["conformance.plugin", "pytester"]  # pytester: the plugin's own tests (tests/plugin)

import pytest  # noqa: E402


def pytest_addoption(parser):
    parser.addoption(
        "--run-packaging",
        action="store_true",
        default=False,
        help="also run the tests marked packaging: build the wheel or a kernel repository's tool "
        "chain in a scratch virtual environment (tens of seconds each)",
    )
    parser.addoption(
        "--run-browsers",
        action="store_true",
        default=False,
        help="also run the tests marked browsers: several real browsers at once on the served page, "
        "or a Playwright server (a minute or more each here)",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "packaging: builds and installs the wheel in a scratch virtual environment (run with --run-packaging)",
    )
    config.addinivalue_line(
        "markers", "browsers: opens several real browsers, or a Playwright server (run with --run-browsers)"
    )


#: Marker -> (the option that runs its tests, why they are left out otherwise).
OPT_IN = {
    "packaging": ("--run-packaging", "builds and installs the wheel: run with --run-packaging"),
    "browsers": ("--run-browsers", "opens several real browsers: run with --run-browsers"),
}


def pytest_collection_modifyitems(config, items):
    for marker, (option, reason) in OPT_IN.items():
        if config.getoption(option):
            continue
        for item in items:
            if item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))
