"""The folder of ``--repro-dir``: names made safe, paths kept inside it, and the index of the run's groups.

Plain data and files only (no NumPy): the plugin's hooks write the index on the process that writes the report,
from the entries of the failing cases (:meth:`conformance.certify.repro.collect.ReproCollector.add`, sent with
each test's report). A group's candidate repros lie under ``DIR/.candidates/<group>/<case>/`` (with ``<case>.json``: its
size, case id, verdict and files); :func:`finalize` moves the smallest of each to
``DIR/<group>/``, removes the rest (and the folders of groups an earlier run's index listed that this run has
not) and writes ``DIR/index.json`` and ``DIR/index.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

from conformance.certify.report.quote import cell, code_span
from conformance.errors import ConformanceError
from conformance.files import check_no_links, check_output, read_named, write_output

INDEX_JSON, INDEX_MD, CANDIDATES = "index.json", "index.md", ".candidates"
#: The cap on an earlier run's index read back (to remove the groups it listed that this run has not).
MAX_INDEX = 64 << 20


def safe_name(text: str) -> str:
    """``text`` as one path component: letters, digits, ``.``, ``_`` and ``-`` only, never starting with a dot."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", text)[:100].lstrip("._-")
    if not name:
        raise ConformanceError(f"{text!r}: no safe file name in it")
    return name


def check_dir(root: Path) -> Path:
    """DIR of ``--repro-dir``: a directory (made if absent), reached through no symlink; refused with a one-line
    reason otherwise."""
    root = Path(root)
    check_no_links(root)
    if os.path.lexists(root) and (os.path.islink(root) or not root.is_dir()):
        raise ConformanceError(f"--repro-dir {root}: not a directory")
    check_output(root / INDEX_JSON)
    root.mkdir(parents=True, exist_ok=True)
    return root


def inside(root: Path, *parts: str) -> Path:
    """``root/parts...``, refused unless each part is a plain name and none of them is a symlink (so the path
    stays inside ``root``, wherever ``root`` is)."""
    path = Path(root)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\0" in part:
            raise ConformanceError(f"{Path(root, *parts)}: not a plain name inside --repro-dir {root}")
        path = path / part
        if os.path.islink(path):
            raise ConformanceError(
                f"{path}: a symlink inside --repro-dir (to {os.readlink(path)}); refusing to "
                f"write through it, remove it"
            )
    check_no_links(path)
    return path


def write_inside(root: Path, rel: list[str], data: bytes) -> Path:
    """``data`` to ``root/rel...`` (folders made), atomically and never through a link."""
    path = inside(root, *rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_output(path, data)


def _remove_tree(root: Path, *parts: str) -> None:
    """Remove a folder this writer made under ``root`` (never through a link)."""
    path = inside(root, *parts)
    if path.is_dir():
        shutil.rmtree(path)


def digest(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def previous_groups(root: Path) -> set[str]:
    """The group folders the index already in ``root`` lists (an earlier run's), or none."""
    path = Path(root) / INDEX_JSON
    if not os.path.lexists(path):
        return set()
    try:
        old = json.loads(read_named(path, MAX_INDEX))
        slugs = {g["slug"] for g in old.get("groups", [])}
    except (ConformanceError, ValueError, TypeError, KeyError, AttributeError):
        return set()  # not an index this writer made: nothing of it is removed
    return {s for s in slugs if isinstance(s, str) and s == safe_name(s) and s != CANDIDATES}


def remove_candidate(root: Path, slug: str, name: str) -> None:
    """A candidate a smaller case of its group replaced: its folder and its description."""
    _remove_tree(root, CANDIDATES, slug, name)
    about = inside(root, CANDIDATES, slug, name + ".json")
    if about.is_file():
        about.unlink()


def groups_of(entries: list[dict]) -> list[dict]:
    """The failing cases' entries (:meth:`conformance.certify.repro.collect.ReproCollector.add`) as groups: key,
    members, why none has a repro; largest first within each op and kind."""
    groups: dict[str, dict] = {}
    for entry in entries:
        group = groups.setdefault(
            entry["slug"], {"slug": entry["slug"], "key": entry["key"], "members": [], "note": None}
        )
        group["members"].append(entry["case_id"])
        group["note"] = group["note"] or entry.get("note")
    return sorted(groups.values(), key=lambda g: (g["key"]["op"], g["key"]["kind"], -len(g["members"]), g["slug"]))


def smallest_candidate(root: Path, slug: str) -> dict | None:
    """The smallest case any process wrote for the group (its description, with ``name``), or None."""
    folder = inside(root, CANDIDATES, slug)
    found = []
    for about in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(read_named(inside(root, CANDIDATES, slug, about.name), MAX_INDEX))
        except (ConformanceError, ValueError):
            continue
        if inside(root, CANDIDATES, slug, about.stem).is_dir():
            found.append({**data, "name": about.stem})
    return min(found, key=lambda d: (d["size"], d["case_id"]), default=None)


def finalize(root: Path, entries: list[dict]) -> dict:
    """Move each group's smallest candidate to ``DIR/<group>/``, remove the candidates, write the index."""
    start = time.perf_counter()
    root = Path(root)
    groups = groups_of(entries)
    for group in groups:
        best = group["best"] = smallest_candidate(root, group["slug"])
        if best is not None:
            _remove_tree(root, group["slug"])
            os.replace(inside(root, CANDIDATES, group["slug"], best["name"]), inside(root, group["slug"]))
    _remove_tree(root, CANDIDATES)
    for slug in previous_groups(root) - {g["slug"] for g in groups}:  # a finding this run no longer has
        _remove_tree(root, slug)
    index = {"repro_dir": str(root), "failures": sum(len(g["members"]) for g in groups), "groups": []}
    for group in groups:
        best = group["best"]
        index["groups"].append(
            {
                **group["key"],
                "slug": group["slug"],
                "count": len(group["members"]),
                "members": sorted(group["members"]),
                "repro": None
                if best is None
                else {
                    "case_id": best["case_id"],
                    "run": f"{group['slug']}/{best['files'][0]}",
                    "files": best["files"],
                    "verdict": best["verdict"],
                },
                "note": None if best is not None else (group["note"] or "no candidate was written (its process died?)"),
            }
        )
    index["written"] = sum(1 for g in index["groups"] if g["repro"])
    write_inside(root, [INDEX_JSON], (json.dumps(index, indent=2) + "\n").encode())
    write_inside(root, [INDEX_MD], index_markdown(index).encode())
    index["seconds"] = sum(e.get("seconds", 0.0) for e in entries) + time.perf_counter() - start
    return index


def index_markdown(index: dict) -> str:
    lines = [
        "# Standalone reproductions",
        "",
        f"{index['failures']} failing case(s) in {len(index['groups'])} group(s) of identical failures (same op, "
        f"implementation, provider, kind and signature); {index['written']} group(s) with a repro, each of its "
        f"smallest case. {how_to_run(index['groups'])}",
        "",
        "| group | implementation | kind | cases | signature | repro |",
        "| --- | --- | --- | ---: | --- | --- |",
    ]
    for g in index["groups"]:
        repro = code_span(g["repro"]["run"]) if g["repro"] else cell(g["note"] or "none")
        impl = g["implementation"] + (f" ({g['provider']})" if g.get("provider") else "")
        lines.append(
            f"| {code_span(g['slug'])} | {cell(impl)} | {g['kind']} | {g['count']} | {cell(g['signature'])} | {repro} |"
        )
    for g in index["groups"]:
        lines += ["", f"## {cell(g['op'])}: {g['kind']}: {cell(g['signature'])}", ""]
        if g["repro"]:
            lines += [
                f"Repro: {code_span(g['repro']['run'])}, case {code_span(g['repro']['case_id'])}: "
                f"{cell(g['repro']['verdict'])}",
                "",
            ]
        else:
            lines += [f"No repro: {cell(g['note'] or 'none')}", ""]
        lines += [f"{g['count']} case(s):", ""] + [f"- {code_span(m)}" for m in g["members"]]
    return "\n".join(lines) + "\n"


def summary_line(index: dict) -> str:
    return (
        f"repros: {index['failures']} failing case(s) in {len(index['groups'])} group(s), {index['written']} "
        f"written to {index['repro_dir']} (index.md, index.json); {index['seconds']:.2f} s spent on them"
    )


def how_to_run(groups) -> str:
    """How the index's repros are run: a script with ``python``, a page from a local HTTP server (its README says
    how), or both where the index holds both kinds."""
    kinds = {Path(g["repro"]["run"]).suffix for g in groups if g.get("repro")}
    ways = []
    if kinds - {".html"}:
        ways.append(
            "run a script from its folder with `python <file>`: it exits 0 when the implementation behaves "
            "as the contract expects and 1 when the failure reproduces"
        )
    if ".html" in kinds:
        ways.append(
            "open a page (`index.html`) from a local HTTP server, as its folder's README.md says: its title "
            "ends in PASS when the implementation behaves as the contract expects, FAIL when the failure "
            "reproduces and CANNOT RUN HERE when the browser offers no WebGPU"
        )
    text = "; ".join(ways) + "."
    return text[0].upper() + text[1:] if ways else "No group has a repro."
