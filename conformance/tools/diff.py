"""Behavioural diff of two versions of kernel packages, and the CI gate built on it.

Every call either version's case generator produces is planned by both manifests; a call whose expected
outcome (what the golden files record: variant, dispatch, outputs, or the rejection) differs is a change.
Calls are matched by their arguments, profile and tunables, never by case id (the id names the outcome).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import cases
from cases.calls import CallSpec, outcome
from cases.golden import compare as golden_compare
from cases.golden import digest_path, golden_path, read_digest_text, record_line, regenerate_command
from conformance.engine.package import Package, find_package_dirs, load_package
from conformance.engine.planner import Planner
from conformance.errors import ConformanceError

FIELDS = {
    "accepted": ("variant", "passes", "outputs"),
    "rejected": ("reason", "argument", "detail"),
    "planning-failed": ("pointer", "message"),
}
LABELS = {"passes": "dispatch"}


# -- where the two versions come from ---------------------------------------------------------------
@dataclass(frozen=True)
class Side:
    label: str
    specs: Path
    golden: Path | None  # the golden case files of this version, where known


def _git(repo: Path, *args: str, binary: bool = False):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary)


def repo_root(start: Path | None = None) -> Path:
    """The git work tree around ``start`` (default: the current directory), else this project's root."""
    out = _git(start or Path.cwd(), "rev-parse", "--show-toplevel")
    return Path(out.stdout.strip()) if out.returncode == 0 else Path(__file__).resolve().parents[2]


def resolve(ref: str | None, repo: Path, scratch: Path, specs_path: str = "specs", golden_path: str = "cases") -> Side:
    """None: the work tree; a git revision of ``repo``: that revision, extracted; otherwise an existing directory.

    A name that is both a revision and an existing path is refused: a change adding a directory named like
    the base revision (``origin/main/<package>/``) would otherwise make the gate compare the change with itself.
    """
    if ref is None:
        return Side("work tree", repo / specs_path, repo / golden_path)
    resolved = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    is_revision = resolved.returncode == 0
    is_path = os.path.lexists(ref)
    if is_revision and is_path:
        raise ConformanceError(
            f"{ref!r} is ambiguous: both a git revision of {repo} and the path "
            f"{Path(ref).resolve()}; name the directory as ./{ref} or with an absolute path "
            f"(after removing the revision), or the revision by its commit id"
        )
    if not is_revision:
        if not Path(ref).is_dir():
            raise ConformanceError(
                f"{ref!r} is neither a directory nor a git revision of {repo}{missing_hint(repo, ref)}"
            )
        return Side(ref, Path(ref), None)
    present = [p for p in (specs_path, golden_path) if _git(repo, "cat-file", "-e", f"{ref}:{p}").returncode == 0]
    if specs_path not in present:
        raise ConformanceError(f"revision {ref} of {repo} has no {specs_path}/")
    archive = _git(repo, "archive", "--format=tar", ref, "--", *present, binary=True)
    if archive.returncode:
        raise ConformanceError(f"git archive {ref} failed: {archive.stderr.decode(errors='replace').strip()}")
    # a folder of its own per revision, named by the commit (never by the name: a/b and a_b, HEAD~2 and HEAD^2
    # would share one, and the gate would compare a revision with itself)
    dest = Path(tempfile.mkdtemp(prefix=f"{resolved.stdout.strip()}-", dir=scratch))
    try:  # "data" refuses members that would land outside dest (an outward symlink, an absolute path)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(dest, filter="data")
    except tarfile.TarError as exc:
        raise ConformanceError(f"revision {ref} of {repo}: refusing to extract {specs_path}/: {exc}") from None
    return Side(ref, dest / specs_path, dest / golden_path if golden_path in present else None)


def missing_hint(repo: Path, ref: str) -> str:
    """Why a base revision can be missing in CI, and the fix: a shallow clone has no history to diff against."""
    remote, _, branch = ref.partition("/")
    if _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        return (
            "; this clone is shallow (actions/checkout fetches one commit by default): the diff needs the "
            "base's history, so check out with `fetch-depth: 0` (actions/checkout `with: {fetch-depth: 0}`) "
            "or run `git fetch --unshallow origin` first"
        )
    if remote == "origin" and branch:
        return f"; fetch it first: `git fetch origin {branch}`"
    return ""


def packages(side: Side) -> dict[str, Package]:
    found = {}
    for d in find_package_dirs(side.specs):
        p = load_package(d)
        if p.name in found:  # keeping either one would diff the wrong package
            raise ConformanceError(f"{side.label}: {found[p.name].root} and {p.root} both have the op id {p.name!r}")
        found[p.name] = p
    if not found:
        raise ConformanceError(f"{side.label}: no kernel package in {side.specs}")
    return found


# -- the comparison ---------------------------------------------------------------------------------
def call_key(case) -> tuple:
    inputs = tuple(sorted((r, None if a is None else (tuple(a[0]), a[1])) for r, a in case.inputs.items()))
    return inputs, case.profile.name, tuple(sorted(case.tunables.items())), tuple(sorted(case.attributes.items()))


def expect(planner, key: tuple) -> dict:
    """What ``planner`` (None: no such package) makes of the call ``key``, in the golden files' form."""
    if planner is None:
        return {"outcome": "absent"}
    m = planner.manifest
    inputs, profile, tunables, attributes = key
    known = {s.role for s in m.inputs}
    unknown = [r for r, a in inputs if a is not None and r not in known]
    if unknown:
        return {"outcome": "rejected", "reason": "unknown-argument", "detail": unknown[0]}
    return outcome(planner, CallSpec.of(m, dict(inputs), profile, dict(tunables), dict(attributes)))


def changed_fields(old: dict, new: dict) -> list[str]:
    if old["outcome"] != new["outcome"]:
        return ["outcome"]
    return [f for f in FIELDS.get(new["outcome"], ()) if old.get(f) != new.get(f)]


@dataclass
class Change:
    case: str  # the id NEW's generator gives the call (OLD's when only OLD generates it)
    source: str  # which generators produced the call: old, new or both
    call: tuple
    old: dict
    new: dict
    fields: list[str]


@dataclass
class PackageDiff:
    name: str
    calls: int
    changes: list[Change] = field(default_factory=list)
    new_cases: list | None = None  # NEW's generated cases (the gate compares them with its golden file)
    record: tuple[str, str] | None = None  # (the op record OLD's golden files name, the one found now): changed

    @property
    def changed(self) -> bool:
        return bool(self.changes or self.record)


_GENERATED: dict[str, list] = {}


def generate(package: Package) -> list:
    """``cases.generate``, memoised by manifest content: cases depend on the manifest alone, and a
    long-lived process (the gate's tests) diffs the same versions again."""
    key = package.manifest.sha256
    if key not in _GENERATED:
        _GENERATED[key] = cases.generate(package)
    return _GENERATED[key]


def diff_package(name: str, old: Package | None, new: Package | None) -> PackageDiff:
    planners = [Planner(p.manifest) if p else None for p in (old, new)]
    generated = {side: generate(p) if p else [] for side, p in (("old", old), ("new", new))}
    ids: dict[tuple, str] = {}
    source: dict[tuple, str] = {}
    for side in ("old", "new"):  # NEW's ids win
        for c in generated[side]:
            key = call_key(c)
            ids[key] = c.id
            source[key] = "both" if source.get(key, side) != side else side
    result = PackageDiff(name, len(ids), new_cases=generated["new"] if new else None)
    for key, cid in ids.items():
        a, b = (expect(p, key) for p in planners)
        fields = changed_fields(a, b)
        if fields:
            result.changes.append(Change(cid, source[key], key, a, b, fields))
    return result


def diff(old: dict[str, Package], new: dict[str, Package]) -> list[PackageDiff]:
    """Packages paired by name (op id, ``@<version>`` from version 2 on); two sides of one package each, of the
    same op, pair whatever their versions (``diff specs/<op> specs/<op>@2``: what version 2 changes)."""
    if len(old) == len(new) == 1:
        (a, pa), (b, pb) = *old.items(), *new.items()
        if pa.manifest.op_id == pb.manifest.op_id:
            return [diff_package(b if a == b else f"{a} -> {b}", pa, pb)]
    return [diff_package(n, old.get(n), new.get(n)) for n in sorted(old.keys() | new.keys())]


def note_record_changes(diffs: list[PackageDiff], old: Side, new: dict[str, Package]) -> list[PackageDiff]:
    """Mark each package whose op record is not the one OLD's golden files were written with (their ``.digest``
    names it: ``cases.golden.record_line``, with the code digest of an outside record): a pull request's
    ``records/`` is run in CI like its manifests, so a changed reference shows in the diff like a changed
    manifest, and the gate asks for its golden files to be regenerated with it."""
    for d in diffs:
        package = new.get(d.name)
        if package is None or old.golden is None:
            continue
        was = _record_named(old.golden, d.name)
        now = record_line(package)
        if was is not None and _identity(was) != _identity(now):
            d.record = (was, now)
    return diffs


def _identity(line: str) -> str:
    """A record line less where the record came from (``(registered at run time)`` when ``new`` wrote the golden
    files, ``(distribution ...)`` once installed): what it is and its code digest, not how it was found."""
    return line.rsplit(" (", 1)[0]


def _record_named(golden: Path, name: str) -> str | None:
    """The record line of ``name``'s digest sidecar in ``golden`` (None when it has none)."""
    lines = (read_digest_text(digest_path(golden, name)) or "").splitlines()
    return lines[1].strip() if len(lines) > 1 else None


# -- the gate ---------------------------------------------------------------------------------------
def unacknowledged(diffs: list[PackageDiff], old: Side, new: Side) -> list[str]:
    """Packages whose behaviour changed without their golden file being regenerated in the same change."""
    out = []
    for d in diffs:
        if d.record and (
            new.golden is None or _identity(_record_named(new.golden, d.name) or "") != _identity(d.record[1])
        ):
            out.append(
                f"{d.name}: its op record changed ({d.record[1].removeprefix('record: ')}) but the golden "
                f"files still name {d.record[0].removeprefix('record: ')}: run "
                f"`{regenerate_command(new.specs, new.golden)}`, review the diff and commit it"
            )
        if not d.changes:
            continue
        if new.golden is None or not new.golden.is_dir():
            out.append(f"{d.name}: behaviour changed and {new.label} has no golden case files to acknowledge it")
            continue
        path = golden_path(new.golden, d.name)
        base = golden_path(old.golden, d.name) if old.golden else None
        base_text = base.read_bytes() if base and base.is_file() else None
        if d.new_cases is None:
            stale = path.is_file()
        else:
            stale = golden_compare(path, d.new_cases).differs  # as `cases --check` judges it
        command = regenerate_command(new.specs, new.golden)
        if stale:
            out.append(
                f"{d.name}: behaviour changed but {path} does not match the new manifest: run "
                f"`{command}`, review the diff and commit it"
            )
        elif base_text == (path.read_bytes() if path.is_file() else None):
            out.append(
                f"{d.name}: behaviour changed but {path} is the same as in {old.label}: run `{command}` and commit it"
            )
    return out


# -- output -----------------------------------------------------------------------------------------
def cell(expect: dict, name: str) -> str:
    if name == "outcome":
        o = expect["outcome"]
        return (
            f"{o}: {expect.get('variant') or expect.get('reason') or expect.get('pointer')}"
            if o != "absent"
            else "absent (no package)"
        )
    value = expect.get(name)
    if name == "passes":
        return "; ".join(
            f"{p['name']} {p['threads']} thr / wg {p['workgroupSize']} -> {'x'.join(map(str, p['workgroups']))}"
            for p in value
        )
    if name == "outputs":
        return ", ".join(f"{r}[{','.join(map(str, o['shape']))}]:{o['dtype']}" for r, o in value.items())
    return value if isinstance(value, str) else json.dumps(value)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def table(diffs: list[PackageDiff], width: int = 60) -> str:
    lines = []
    for d in diffs:
        lines.append(f"{d.name}: {len(d.changes)} of {d.calls} calls change")
        if d.record:
            lines += [f"  op record was: {d.record[0]}", f"  op record now: {d.record[1]}"]
        rows = [
            (
                c.case + (" (old id)" if c.source == "old" else "") if i == 0 else "",
                LABELS.get(f, f),
                _clip(cell(c.old, f), width),
                _clip(cell(c.new, f), width),
            )
            for c in d.changes
            for i, f in enumerate(c.fields)
        ]
        if not rows:
            continue
        rows.insert(0, ("case", "change", "old", "new"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines += ["  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
    return "\n".join(lines)


def change_json(c: Change) -> dict:
    inputs, profile, tunables, attributes = c.call
    call = {
        "inputs": {r: None if a is None else {"shape": list(a[0]), "dtype": a[1]} for r, a in inputs},
        "profile": profile,
        "tunables": dict(tunables),
    }
    if attributes:
        call["attributes"] = dict(attributes)
    return {
        "case": c.case,
        "generated_by": c.source,
        "fields": [LABELS.get(f, f) for f in c.fields],
        "old": c.old,
        "new": c.new,
        "call": call,
    }


def as_json(diffs: list[PackageDiff], old: Side, new: Side, gate: list[str] | None = None) -> dict:
    out = {
        "old": old.label,
        "new": new.label,
        "changed": any(d.changed for d in diffs),
        "packages": {
            d.name: {
                "calls": d.calls,
                "changes": [change_json(c) for c in d.changes],
                **({"record": {"old": d.record[0], "new": d.record[1]}} if d.record else {}),
            }
            for d in diffs
        },
    }
    if gate is not None:
        out["unacknowledged"] = gate
    return out
