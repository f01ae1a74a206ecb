"""Every tool the README tells a developer to run comes with an extra of ``pyproject.toml``."""

import re

import tomllib

from tests.docs import manual
from tests.layout.test_imports import ROOT

EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
README = manual()


def requirement_names(extra: str) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in EXTRAS[extra]}


def test_the_dev_extra_installs_tox_and_pre_commit():
    assert {"tox", "pre-commit"} <= requirement_names("dev")
    assert "pip install -e '.[dev]'" in README


def test_each_tool_the_readme_runs_is_in_an_extra():
    used = {
        tool
        for tool in ("tox", "pre-commit", "matplotlib", "playwright")
        if re.search(rf"(^|`|\s){re.escape(tool)}[ `]", README, re.M)
    }
    provided = set().union(*(requirement_names(extra) for extra in EXTRAS))
    assert used and used <= provided, used - provided


def test_the_bench_extra_installs_what_plot_needs():
    assert "matplotlib" in requirement_names("bench")
