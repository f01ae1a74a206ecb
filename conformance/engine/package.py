"""Kernel packages on disk: find them, and read their files without leaving the package directory.

Two layouts are accepted: the repository's (``<pkg>/manifest.json`` beside its
templates) and the published one (``<pkg>/build/webgpu/manifest.json``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from conformance.engine.manifest import Manifest, load_manifest
from conformance.errors import ManifestError, TemplateError

#: The kernel packages this suite ships: in an installed wheel ``conformance/specs/`` (setup.py copies the
#: repository's ``specs/`` there), in a source checkout or an editable install the checkout's ``specs/``.
INSTALLED_SPECS = Path(__file__).resolve().parents[1] / "specs"
SOURCE_SPECS = Path(__file__).resolve().parents[2] / "specs"
REPO_SPECS = INSTALLED_SPECS if INSTALLED_SPECS.is_dir() else SOURCE_SPECS
PUBLISHED = Path("build") / "webgpu"


def manifest_path(directory: Path) -> Path | None:
    for candidate in (directory / "manifest.json", directory / PUBLISHED / "manifest.json"):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Package:
    """A kernel package: its validated manifest and its directory of templates."""

    root: Path          # the directory holding manifest.json
    manifest: Manifest

    @property
    def name(self) -> str:
        return self.manifest.op_id

    def template_path(self, name: str) -> Path:
        """The template file ``name``, refusing anything that resolves outside the package directory."""
        if not name or name.startswith(("/", "\\")) or ".." in Path(name).parts or os.path.isabs(name):
            raise TemplateError(f"{self.root}: template name {name!r} must be a plain file name in the package")
        path = self.root / name
        real_root = self.root.resolve()
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise TemplateError(f"{self.root}: template {name!r} not found (named by the manifest)") from None
        if real_root not in real.parents:
            raise TemplateError(f"{self.root}: template {name!r} resolves to {real}, outside the package directory")
        if not real.is_file():
            raise TemplateError(f"{self.root}: template {name!r} is not a file")
        return real

    def read_template(self, name: str) -> str:
        path = self.template_path(name)
        if path.stat().st_size > 1 << 20:
            raise TemplateError(f"{path}: template is larger than 1 MiB")
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TemplateError(f"{path}: cannot read template: {exc}") from None

    @cached_property
    def identity(self) -> dict:
        """Names and sha256 digests of the manifest and every template it names."""
        files = {"manifest.json": self.manifest.sha256}
        for shader in self.manifest.shaders:
            try:
                files[shader] = hashlib.sha256(self.template_path(shader).read_bytes()).hexdigest()
            except TemplateError:
                files[shader] = None
        return {"package": self.name, "root": str(self.root), "files": files}


def load_package(ref: str | Path, specs_dir: Path | None = None) -> Package:
    """A package by name under ``specs_dir`` (default: the repository's ``specs/``) or by path."""
    ref_path = Path(ref)
    candidates = [ref_path] if (ref_path.is_absolute() or ref_path.exists()) else []
    candidates.append((specs_dir or REPO_SPECS) / str(ref))
    for directory in candidates:
        if directory.is_dir():
            path = manifest_path(directory)
            if path is None:
                raise ManifestError(f"no manifest.json in {directory} (nor in {directory / PUBLISHED})",
                                    file=str(directory))
            return Package(path.parent, load_manifest(path))
    known = ", ".join(sorted(p.name for p in find_package_dirs(specs_dir or REPO_SPECS)))
    raise ManifestError(f"no kernel package {str(ref)!r}; known packages: {known or 'none'}", file=str(ref))


def find_package_dirs(directory: Path) -> list[Path]:
    """Package directories at ``directory`` itself or one level below it, sorted."""
    directory = Path(directory)
    if manifest_path(directory):
        return [directory]
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_dir() and manifest_path(p))
