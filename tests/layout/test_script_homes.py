"""Issue 52, item 9: ``scripts/`` holds the README's commands and the CI helpers, the research scripts live in
``research/`` (each listed in its README), and every path to a script that the docs, the tests and the scripts
themselves name exists."""

from __future__ import annotations

import re

from tests.docs import README_PATH, ROOT

#: The README's commands (setup.sh, test.sh) and the helpers CI and the docs' upkeep run.
SCRIPTS = {"setup.sh", "test.sh", "plan_digest.py", "readme_numbers.py", "expectations_from_report.py"}
#: A script's path in text (``scripts/<name>.py``) or in a test's path expression (``"research" / "<name>.py"``).
NAMED = re.compile(r"\b(scripts|research)/([\w.-]+\.(?:py|sh))\b|\"(scripts|research)\" / \"([\w.-]+\.(?:py|sh))\"")


def test_scripts_holds_the_readme_commands_and_the_ci_helpers_only():
    """A new script is one or the other, or research (``research/``)."""
    assert {p.name for p in (ROOT / "scripts").iterdir() if p.is_file()} == SCRIPTS


def test_the_research_readme_lists_every_research_script():
    readme = (ROOT / "research" / "README.md").read_text()
    assert [p.name for p in sorted((ROOT / "research").glob("*.py")) if f"`{p.name}`" not in readme] == []


def test_every_script_path_named_exists():
    sources = [
        README_PATH,
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "research").iterdir(),
        *(ROOT / "scripts").iterdir(),
        *(ROOT / "tests").rglob("*.py"),
        ROOT / ".ci" / "run",
        ROOT / "tox.ini",
    ]
    missing = []
    for source in sources:
        if not source.is_file():
            continue
        for match in NAMED.finditer(source.read_text(errors="replace")):
            folder, name = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            if not (ROOT / folder / name).is_file():
                missing.append(f"{source.relative_to(ROOT)}: {folder}/{name}")
    assert missing == []
