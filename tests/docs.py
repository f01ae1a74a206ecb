"""The project's documentation as the tests read it: the short README and the manual's chapters
(``docs/manual/*.md``, in the order of its table of contents), so a claim is found wherever the text lives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_PATH = ROOT / "README.md"
MANUAL_DIR = ROOT / "docs" / "manual"


def chapters() -> list[Path]:
    """The manual's chapter files, in its table of contents' order (docs/manual/README.md)."""
    index = MANUAL_DIR / "README.md"
    if not index.is_file():
        return []
    names = re.findall(r"\]\(([\w-]+\.md)\)", index.read_text())
    return [MANUAL_DIR / n for n in dict.fromkeys(names)]


def manual() -> str:
    """The README, then every chapter of the manual, one text."""
    return "\n".join([README_PATH.read_text(), *(p.read_text() for p in chapters())])
