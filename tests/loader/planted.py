"""A scratch copy of the reference loader with one bug planted: ``planted_loader(tmp_path, file, old, new)``."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.config import REPO_LOADER
from conformance.tools.jsjinja import locate

ROOT = Path(__file__).resolve().parents[2]


def planted_loader(tmp_path: Path, file: str, old: str, new: str) -> Path:
    """``loader/`` copied under ``tmp_path`` with ``old`` replaced by ``new`` in ``src/<file>`` (``old`` must occur
    exactly once: a plant that no longer applies fails loudly instead of testing nothing)."""
    dst = tmp_path / "loader"
    shutil.copytree(REPO_LOADER, dst, ignore=shutil.ignore_patterns("node_modules"))
    target = dst / "src" / file
    text = target.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the plant's text occurs {text.count(old)} times in loader/src/{file}"
    target.write_text(text.replace(old, new), encoding="utf-8")
    jinja_dir, _ = locate()  # .../node_modules/@huggingface/jinja: Node finds it by walking up from the copy
    (tmp_path / "node_modules").symlink_to(jinja_dir.parent.parent, target_is_directory=True)
    return dst
