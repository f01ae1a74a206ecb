"""Scratch copies of the repository's packages (and golden files) to break or edit on purpose."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FASTGELU = "com.microsoft.FastGelu"
GELU = "com.microsoft.Gelu"


@pytest.fixture
def specs(tmp_path):
    """A copy of specs/ (both packages)."""
    dst = tmp_path / "specs"
    for name in (FASTGELU, GELU):
        shutil.copytree(ROOT / "specs" / name, dst / name)
    return dst


def edit_manifest(package_dir: pathlib.Path, change) -> None:
    """Apply ``change(raw)`` to a package's manifest (rewritten with json's own formatting)."""
    path = package_dir / "manifest.json"
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw, indent=2))


def variant(raw: dict, vid: str) -> dict:
    return next(v for v in raw["variants"] if v["id"] == vid)


@pytest.fixture(scope="session")
def device():
    from conformance.errors import DeviceError
    from conformance.gpu.device import get_device

    try:
        return get_device("vulkan")
    except DeviceError as err:
        pytest.skip(f"no Vulkan device: {err}")


def git(repo: pathlib.Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=gate", "-c", "user.email=gate@example.invalid", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def make_repo(root: pathlib.Path, specs: str = "specs", golden: str = "cases") -> pathlib.Path:
    """A git repository at ``root`` holding FastGelu's package in ``specs/`` and its golden file in ``golden/``,
    committed once (``kernels``, ``kernel-cases``: the README's kernel repository)."""
    shutil.copytree(ROOT / "specs" / FASTGELU, root / specs / FASTGELU)
    (root / golden).mkdir()
    shutil.copy(ROOT / "cases" / f"{FASTGELU}.yaml", root / golden)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    return root


@pytest.fixture
def repo(tmp_path):
    """The suite's own layout: specs/ and cases/."""
    return make_repo(tmp_path / "repo")
