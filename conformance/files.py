"""Reading and writing a package's files without leaving it: the one place every reader and writer goes through.

Reading (:func:`read_confined`, :func:`package_files`): the path must stay inside the package root once symlinks
are resolved, must be a regular file (never a FIFO, a device such as ``/dev/zero``, a socket or a directory),
and is read with a size cap. The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open
descriptor, so a FIFO swapped in after the check cannot hang the reader.

Writing (:func:`check_output` before any work, :func:`write_output` at the end): a symlink or anything but a
regular file at the target is refused, never written through; the file is opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conformance.errors import ConformanceError, ManifestError

#: The cap on one package file that defines the kernel (manifest.json, a template): 1 MiB.
MAX_PACKAGE_FILE = 1 << 20
#: The cap on one data file of a package (test.json, bench.json): 64 MiB.
MAX_DATA_FILE = 64 << 20


def confined(root: Path, path: Path, error=ManifestError) -> Path:
    """``path`` resolved, refusing it unless it is a regular file inside ``root`` (both resolved)."""
    real_root = Path(root).resolve()
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise error(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", file=str(path)) from None
    mode = os.stat(real).st_mode
    if not stat.S_ISREG(mode):
        raise error(f"is not a regular file ({_kind(mode)}); a package holds regular files only", file=str(path))
    if real != real_root and real_root not in real.parents:
        raise error(f"resolves to {real}, outside the package directory {real_root}", file=str(path))
    return real


def read_confined(root: Path, path: Path, limit: int = MAX_PACKAGE_FILE, error=ManifestError) -> bytes:
    """The bytes of ``path``, a regular file inside ``root`` of at most ``limit`` bytes."""
    real = confined(root, path, error)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise error(f"cannot read it: {exc.strerror or exc}", file=str(path)) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise error(f"is not a regular file ({_kind(st.st_mode)})", file=str(path))
        if st.st_size > limit:
            raise error(f"is {st.st_size} bytes, more than the {limit}-byte limit", file=str(path))
        data = f.read(limit + 1)
    if len(data) > limit:
        raise error(f"is more than the {limit}-byte limit", file=str(path))
    return data


def package_files(root: Path, pattern: str = "*", error=ManifestError) -> list[Path]:
    """Files matching ``pattern`` under ``root``, checked by :func:`confined` (symlinks out, FIFOs refused)."""
    found = []
    for path in sorted(Path(root).rglob(pattern)):
        if path.is_dir() and not path.is_symlink():
            continue
        confined(root, path, error)
        found.append(path)
    return found


def copy_package(source: Path, dest: Path, error=ManifestError) -> Path:
    """Copy the package at ``source`` into ``dest``: its regular files only, each checked by :func:`read_confined`
    (a symlink out of the package, a FIFO or a device is refused, never copied or read); returns ``dest``."""
    source, dest = Path(source), Path(dest)
    for path in sorted(source.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            continue
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read_confined(source, path, MAX_DATA_FILE, error))
    dest.mkdir(parents=True, exist_ok=True)
    return dest


def check_output(path: Path) -> Path:
    """Refuse ``path`` as an output unless it is absent or a regular file (not a symlink); call before any work."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = path.parent
        while not os.path.lexists(parent) and parent != parent.parent:
            parent = parent.parent                  # the nearest existing folder above (missing ones get made)
        if not parent.is_dir():
            raise ConformanceError(f"{path}: cannot write here, {parent} is not a directory") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ConformanceError(f"{path}: cannot write here, {parent} is not writable") from None
        return path
    except OSError as exc:
        raise ConformanceError(f"{path}: cannot write here: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConformanceError(f"{path}: refusing to write through a symlink (to {os.readlink(path)}); remove it")
    if not stat.S_ISREG(st.st_mode):
        raise ConformanceError(f"{path}: refusing to write to {_kind(st.st_mode)}; only regular files are written")
    if not os.access(path, os.W_OK):
        raise ConformanceError(f"{path}: not writable")
    return path


def write_output(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), never through a symlink nor into a special file."""
    check_output(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise ConformanceError(f"{path}: cannot write it: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ConformanceError(f"{path}: refusing to write to a file that is not a regular file")
        f.truncate(0)
        f.write(text.encode("utf-8"))
    return path


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"
