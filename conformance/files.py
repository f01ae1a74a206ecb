"""Reading and writing a package's files without leaving it: the one place every reader and writer goes through.

Reading (:func:`read_confined`, :func:`package_files`): the path must stay inside the package root once symlinks
are resolved, must be a regular file (never a FIFO, a device such as ``/dev/zero``, a socket or a directory),
and is read with a size cap. The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open
descriptor, so a FIFO swapped in after the check cannot hang the reader.

Writing (:func:`check_output` before any work, :func:`write_output` at the end): a symlink or anything but a
regular file at the target is refused, never written through, and so is a path with a symlink in any of its
folders (:func:`check_no_links`: a linked ``kernel-cases/`` or ``out/`` would lead outside what was named). A
file is written to a fresh file beside it and renamed over the target (atomic, and never through the target's
inode: a hard link to another file keeps that file's content).

Reading a file named on a command line (a golden file, an expectations file, a report): :func:`read_named`,
the same checks and cap.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import yaml

from conformance.config import CHECKOUT_VARIABLE
from conformance.errors import ConformanceError, ManifestError

#: The cap on one package file that defines the kernel (manifest.json, a template): 1 MiB.
MAX_PACKAGE_FILE = 1 << 20
#: The cap on one data file of a package (test.json, bench.json): 64 MiB.
MAX_DATA_FILE = 64 << 20


def confined(root: Path, path: Path, error=ManifestError) -> Path:
    """``path`` resolved, refusing it unless it is a regular file inside ``root`` (both resolved), and ``root``
    reached through no symlink (:func:`check_no_links`)."""
    check_no_links(root, lambda message, **_: error(message, file=str(path)))
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


def check_no_links(path: Path, error=ConformanceError) -> Path:
    """Refuse ``path`` when one of its existing components below the current directory is a symlink: the
    checkout a command runs in is what a pull request controls, and a link there (``kernel-cases -> /home``)
    would lead outside it. Components above the current directory, and paths elsewhere, are the caller's own."""
    path = Path(path)
    absolute = Path(os.path.abspath(path))
    for base in link_bases():
        if absolute != base and base not in absolute.parents:
            continue
        current = base
        for part in absolute.relative_to(base).parts:
            current = current / part
            if os.path.islink(current):
                raise error(
                    f"{path}: refusing a path through a symlink ({current} -> {os.readlink(current)}); "
                    f"name the real location instead"
                )
            if not os.path.lexists(current):
                break
    return path


def link_bases() -> list[Path]:
    """The folders below which :func:`check_no_links` refuses links: the current directory, and the checkout a
    command was typed in when it runs elsewhere (``certify`` runs pytest in a scratch folder and names the checkout
    in :data:`CHECKOUT_VARIABLE`)."""
    bases = [Path(os.getcwd())]
    named = os.environ.get(CHECKOUT_VARIABLE, "").strip()
    if named and os.path.isabs(named) and Path(named) not in bases:
        bases.append(Path(os.path.normpath(named)))
    return bases


def read_confined(root: Path, path: Path, limit: int = MAX_PACKAGE_FILE, error=ManifestError) -> bytes:
    """The bytes of ``path``, a regular file inside ``root`` of at most ``limit`` bytes."""
    real = confined(root, path, error)
    return _read_regular(real, path, limit, error)


def read_named(path: Path, limit: int, error=ConformanceError) -> bytes:
    """The bytes of a file named on a command line: a regular file, reached through no symlink, at most
    ``limit`` bytes (never a link to ``/dev/zero`` or to a file outside what was named)."""
    check_no_links(path, lambda message, **_: error(message))
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise error(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise error(f"{path}: is not a regular file ({_kind(mode)})")
    return _read_regular(Path(path), path, limit, lambda message, **_: error(f"{path}: {message}"))


def _read_regular(real: Path, path: Path, limit: int, error) -> bytes:
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
    """Refuse ``path`` as an output unless it is absent or a regular file, reached through no symlink; call before
    any work."""
    path = Path(path)
    check_no_links(path.parent)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = path.parent
        while not os.path.lexists(parent) and parent != parent.parent:
            parent = parent.parent  # the nearest existing folder above (missing ones get made)
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


def write_output(path: Path, text: str | bytes) -> Path:
    """Write ``text`` to ``path`` (a str as UTF-8, bytes as they are): into a fresh file in the same folder, then renamed over ``path``, so the
    target is replaced, never written through (a symlink, a special file or another name of its inode)."""
    check_output(path)
    path = Path(path)
    try:
        fd, scratch = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ConformanceError(f"{path}: cannot write it: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else bytes(text))
        os.chmod(scratch, 0o644)
        check_output(path)  # still no link or special file there
        os.replace(scratch, path)
    except BaseException as exc:
        try:
            os.unlink(scratch)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ConformanceError(f"{path}: cannot write it: {exc.strerror or exc}") from None
        raise
    return path


#: The cap on a YAML file named on a command line (an expectations file) before it is parsed.
MAX_YAML_FILE = 4 << 20


def parse_yaml(data: bytes, where: str, error=ConformanceError):
    """``data`` (UTF-8 YAML, safe tags only) as Python data, with aliases bounded: a few hundred bytes of nested
    aliases (``&a [*b, *b, ...]``) make a tree of exponential size for whatever walks it. The tree's size with
    every alias expanded is counted (each distinct container once) and must stay within
    :data:`YAML_EXPANSION` times the text's length."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})") from None
    try:
        loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{where}: not valid YAML ({at}{str(problem)[:200]})") from None
    limit = YAML_EXPANSION * len(data) + 1000
    if b"&" in data and expanded_size(loaded, limit) > limit:  # no '&' at all: no anchor, so no alias
        raise error(
            f"{where}: its YAML aliases (*name) expand to more than {limit:,} values "
            f"({YAML_EXPANSION} per byte of the file); refusing it"
        )
    return loaded


#: How many values per byte of YAML text its aliases may expand to (files this suite writes: under 1).
YAML_EXPANSION = 8


def expanded_size(root, limit: int) -> int:
    """The number of values in ``root`` with every shared container counted each time it is reached (as
    aliases expand), computed once per distinct container; stops counting past ``limit``."""
    sizes: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, (dict, list)) or (id(node) in sizes and not done):
            continue
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        if not done:
            sizes[id(node)] = -1  # visiting (a cycle is counted as a leaf)
            stack.append((node, True))
            stack.extend((c, False) for c in children if isinstance(c, (dict, list)) and id(c) not in sizes)
            continue
        total = 1 + sum(max(1, sizes.get(id(c), 1)) if isinstance(c, (dict, list)) else 1 for c in children)
        sizes[id(node)] = min(total, limit + 1)
    return sizes.get(id(root), 1) if isinstance(root, (dict, list)) else 1


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a regular file"
