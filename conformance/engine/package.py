"""Kernel packages on disk: find them, and read their files without leaving the package directory.

Two layouts are accepted: the repository's (``<pkg>/manifest.json`` beside its
templates) and the published one (``<pkg>/build/webgpu/manifest.json``).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from conformance.config import REPO_SPECS
from conformance.engine.manifest import Manifest, load_manifest
from conformance.errors import ManifestError, TemplateError
from conformance.files import MAX_PACKAGE_FILE, confined, read_confined

PUBLISHED = Path("build") / "webgpu"
#: A file changed less than this long ago is read again on every ask (file systems keep times at a coarse tick,
#: up to 2 s, so two writes of the same size within one tick leave the same status; git's "racily clean" rule).
RACY_NS = 2_000_000_000


def template_digest(text: str) -> str:
    """The sha256 a template's text is known by (render caches, stale checks, published metadata)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def manifest_path(directory: Path) -> Path | None:
    for candidate in (directory / "manifest.json", directory / PUBLISHED / "manifest.json"):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Package:
    """A kernel package: its validated manifest and its directory of templates."""

    root: Path  # the directory holding manifest.json
    manifest: Manifest

    @property
    def name(self) -> str:
        return self.manifest.package_id

    @property
    def version(self) -> int:
        return self.manifest.version

    def template_path(self, name: str) -> Path:
        """The template file ``name``, refusing anything that resolves outside the package directory."""
        if not name or name.startswith(("/", "\\")) or ".." in Path(name).parts or os.path.isabs(name):
            raise TemplateError(f"{self.root}: template name {name!r} must be a plain file name in the package")
        return confined(self.root, self.root / name, TemplateError)

    def read_template(self, name: str) -> str:
        """The template's text: a regular file inside the package, at most MAX_PACKAGE_FILE (1 MiB)."""
        data = read_confined(self.root, self.template_path(name), MAX_PACKAGE_FILE, TemplateError)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TemplateError(f"{self.root / name}: cannot read template: {exc}") from None

    def template_sha256(self, name: str) -> str:
        """The sha256 of the template's text, read (confined, as :meth:`read_template`) again only when its file's
        status changed: the same file (links followed), size, modification and change times since the last read
        mean the same bytes, so asking before every dispatch whether a template was edited costs one ``stat``."""
        try:
            st = os.stat(self.root / name)
            status = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
                status = None  # changed within a timestamp tick of now: a second write could keep the status
        except (OSError, ValueError):
            status = None
        known = self._template_digests.get(name)
        if status is not None and known is not None and known[0] == status:
            return known[1]
        digest = template_digest(self.read_template(name))
        self._template_digests[name] = (status, digest)
        return digest

    def templates_unchanged(self, digests: dict[str, str]) -> bool:
        """Whether every template named in ``digests`` (name -> sha256) still has that content (unreadable: no)."""
        try:
            return all(self.template_sha256(name) == digest for name, digest in digests.items())
        except TemplateError:
            return False

    @cached_property
    def _template_digests(self) -> dict[str, tuple[tuple | None, str]]:
        return {}

    @cached_property
    def identity(self) -> dict:
        """Names and sha256 digests of the manifest and every template it names."""
        files = {"manifest.json": self.manifest.sha256}
        for shader in self.manifest.shaders:
            try:
                files[shader] = self.template_sha256(shader)
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
                raise ManifestError(
                    f"no manifest.json in {directory} (nor in {directory / PUBLISHED})", file=str(directory)
                )
            return Package(path.parent, load_manifest(path))
    known = ", ".join(sorted(p.name for p in find_package_dirs(specs_dir or REPO_SPECS)))
    raise ManifestError(f"no kernel package {str(ref)!r}; known packages: {known or 'none'}", file=str(ref))


def package_versions(name: str, specs_dir: Path | None = None) -> dict[int, Path]:
    """The published versions of the package ``name`` under ``specs_dir``: version 1 in ``<name>/``, version N
    beside it in ``<name>@N/`` (each in either layout), as {version: directory}."""
    root = Path(specs_dir or REPO_SPECS)
    found = {}
    if manifest_path(root / name):
        found[1] = root / name
    for d in root.glob(f"{name}@*"):
        suffix = d.name[len(name) + 1 :]
        if suffix.isdigit() and int(suffix) > 1 and manifest_path(d):
            found[int(suffix)] = d
    return dict(sorted(found.items()))


def find_package_dirs(directory: Path) -> list[Path]:
    """Package directories at ``directory`` itself or one level below it, sorted."""
    directory = Path(directory)
    if manifest_path(directory):
        return [directory]
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_dir() and manifest_path(p))


def duplicate_names(packages) -> dict[str, list[Path]]:
    """Op ids held by more than one of ``packages``, with the package directories holding each."""
    roots: dict[str, list[Path]] = {}
    for p in packages:
        roots.setdefault(p.name, []).append(p.root)
    return {name: r for name, r in roots.items() if len(r) > 1}
