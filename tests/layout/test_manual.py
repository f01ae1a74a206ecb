"""Issue 41, item 12: a short README (what it is, the two set-up commands, a first run, the map of stages, where to
go next) and the manual in docs/manual/, one chapter a file with a table of contents; every link resolves."""

from __future__ import annotations

import re

from tests.docs import MANUAL_DIR, README_PATH, ROOT, chapters

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path) -> set[str]:
    """GitHub's heading anchors of a Markdown file."""
    heads = re.findall(r"^#{1,6} (.*)$", path.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_the_readme_is_short_and_has_the_two_set_up_commands():
    text = README_PATH.read_text()
    assert len(text.splitlines()) <= 250
    assert "```sh\nbash scripts/setup.sh && python3 -m pytest conformance/ --device=vulkan\n```" in text
    assert "```sh\nbash scripts/test.sh\n```" in text
    for heading in ("### Where each stage lives", "## A first run", "## Where to go next"):
        assert heading in text, heading


def test_the_table_of_contents_lists_every_chapter_and_the_readme_links_each():
    files = {p.name for p in MANUAL_DIR.glob("*.md")} - {"README.md"}
    assert files and {p.name for p in chapters()} == files
    readme = README_PATH.read_text()
    assert all(f"(docs/manual/{name})" in readme for name in files), files


def test_every_relative_link_of_the_readme_and_the_manual_resolves():
    broken = []
    for page in [README_PATH, MANUAL_DIR / "README.md", *chapters()]:
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists() or (anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
