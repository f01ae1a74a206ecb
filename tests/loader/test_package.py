"""The suite reaches the reference loader one way: :data:`conformance.config.REPO_LOADER` and the entries of its
package.json (:func:`conformance.config.loader_entry`), never a path into it; and what the loader's own tests
(``loader/test/``, ``npm test``) take from the suite is the suite's."""

from __future__ import annotations

import json
import re

import pytest

from conformance.config import LOADER_ENTRIES, REPO_LOADER, loader_entry
from conformance.engine.profile import DEFAULT_LIMITS
from tests.loader.planted import ROOT


def test_each_entry_is_the_module_package_json_exports():
    exports = json.loads((REPO_LOADER / "package.json").read_text())["exports"]
    assert tuple(exports) == LOADER_ENTRIES
    for entry in LOADER_ENTRIES:
        assert loader_entry(entry) == (REPO_LOADER / exports[entry]["default"]).resolve()
        assert loader_entry(entry).is_file(), entry


def test_a_loader_without_the_entry_is_named(tmp_path):
    (tmp_path / "package.json").write_text('{"exports": {".": "./index.js"}}')
    assert loader_entry(".", tmp_path) == tmp_path / "index.js"
    with pytest.raises(FileNotFoundError, match=r"no exports entry './plan'"):
        loader_entry("./plan", tmp_path)


def test_the_loader_tests_baseline_limits_are_webgpus_defaults():
    assert json.loads((REPO_LOADER / "test" / "webgpu-default-limits.json").read_text()) == DEFAULT_LIMITS


def test_the_readme_shows_the_cards_lines_as_the_manual_does():
    """One page, two places: loader/README.md's and docs/manual/js-loader.md's (which a browser test runs)."""

    def card(path):
        return re.search(r"```html\n(.*?)```", path.read_text(), re.S).group(1)

    assert card(REPO_LOADER / "README.md") == card(ROOT / "docs" / "manual" / "js-loader.md")
