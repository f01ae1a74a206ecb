"""Repository-level pytest configuration.

The conformance plugin is registered by its ``pytest11`` entry point once the
project is installed; naming it here too lets ``pytest conformance/`` work from
a bare checkout. pytest registers a plugin module once, whichever way it came.
"""

pytest_plugins = ["conformance.plugin", "pytester"]  # pytester: the plugin's own tests (tests/plugin)
