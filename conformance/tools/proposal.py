"""Proposed manifest changes, applied to a scratch copy of a package so they can be benched and certified.

A proposal file (``specs/proposals/*.json``) holds, per package op id, *additions* to that
package's manifest: ``derive`` rules, ``bindingSets`` and ``variants``, and ``templates`` its variants name
(``{"name.wgsl.jinja": "path/relative/to/the/proposal"}``: a shipped template carries no code that only a
proposal renders).  Additions never replace: a name, variant id or template that already exists is an error,
so a proposal cannot change behaviour it does not spell out.  The copy is then an ordinary package: the planner, ``lint``, the case
generator and ``pytest conformance/ --specs`` treat it like any other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from conformance.engine.manifest import read_json
from conformance.engine.package import manifest_path
from conformance.errors import ManifestError
from conformance.files import MAX_PACKAGE_FILE, copy_package, read_confined

ADDITIONS = ("derive", "bindingSets", "variants", "templates")
TEMPLATE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.jinja")


def _copy(package_dir: Path, into: Path, suffix: str) -> tuple[Path, Path, dict]:
    """A scratch copy of the package, its manifest path and the parsed manifest."""
    dst = into / f"{package_dir.name}.{suffix}"
    copy_package(package_dir, dst)
    path = manifest_path(dst)
    if path is None:
        raise ManifestError("no manifest.json in the package", file=str(package_dir))
    return dst, path, read_json(path)


def load(proposal: Path) -> dict:
    """The proposal's per-package additions, checked for shape (the merged manifest is validated on load)."""
    raw = read_json(Path(proposal))
    packages = raw.get("packages") if isinstance(raw, dict) else None
    if not isinstance(packages, dict):
        raise ManifestError(
            "expected an object with a 'packages' object keyed by op id", file=str(proposal), pointer="/packages"
        )
    for op, additions in packages.items():
        where = f"/packages/{op}"
        if not isinstance(additions, dict):
            raise ManifestError(
                f"expected an object with some of {', '.join(ADDITIONS)}", file=str(proposal), pointer=where
            )
        unknown = sorted(set(additions) - set(ADDITIONS))
        if unknown:
            raise ManifestError(
                f"{', '.join(map(repr, unknown))}: a proposal adds only {', '.join(ADDITIONS)}",
                file=str(proposal),
                pointer=f"{where}/{unknown[0]}",
            )
        for key, kind in (("derive", dict), ("bindingSets", dict), ("variants", list), ("templates", dict)):
            if key in additions and not isinstance(additions[key], kind):
                raise ManifestError(
                    f"expected {'an object' if kind is dict else 'a list'}",
                    file=str(proposal),
                    pointer=f"{where}/{key}",
                )
        for i, variant in enumerate(additions.get("variants", [])):
            if not isinstance(variant, dict) or not isinstance(variant.get("id"), str):
                raise ManifestError(
                    "expected a variant object with a string 'id'", file=str(proposal), pointer=f"{where}/variants/{i}"
                )
        for name, source in additions.get("templates", {}).items():
            if not TEMPLATE_NAME.fullmatch(name) or not isinstance(source, str):
                raise ManifestError(
                    "expected a template file name (letters, digits, '_.-', ending in .jinja) "
                    "mapped to its path relative to the proposal",
                    file=str(proposal),
                    pointer=f"{where}/templates/{name}",
                )
    return packages


def apply_all(package_dirs: list[Path], proposal: Path, into: Path) -> list[Path]:
    """:func:`apply` to each package; an op id in the proposal that names none of them is an error (a typo
    would otherwise measure the unchanged packages)."""
    packages = load(proposal)
    copies = [_add(Path(d), packages, Path(proposal), Path(into)) for d in package_dirs]
    ops = {op for _, op in copies}
    for op in packages:
        if op not in ops:
            raise ManifestError(
                f"op {op!r} names none of the packages ({', '.join(sorted(ops))})",
                file=str(proposal),
                pointer=f"/packages/{op}",
            )
    return [dst for dst, _ in copies]


def apply(package_dir: Path, proposal: Path, into: Path) -> Path:
    """A copy of ``package_dir`` with the proposal's additions for its op; unchanged when it names none.

    The copy's manifest is validated when it is loaded, like any package's: a problem inside the added
    content is reported against the copy's ``manifest.json``, where added variants follow the package's own.
    """
    return _add(Path(package_dir), load(proposal), Path(proposal), Path(into))[0]


def _add(package_dir: Path, packages: dict, proposal: Path, into: Path) -> tuple[Path, str]:
    """The copy with ``packages``' additions for its op (from the proposal file ``proposal``), and that op."""
    dst, path, raw = _copy(package_dir, into, proposal.stem)
    op = f"{raw.get('domain')}.{raw.get('name')}"
    if raw.get("version", 1) != 1:  # a proposal's op id names version 1; "<op id>@N" names version N
        op = f"{op}@{raw['version']}"
    additions = packages.get(op)
    if additions is None:
        return dst, op
    for key in ("derive", "bindingSets"):
        existing = raw.setdefault(key, {})
        for name, value in additions.get(key, {}).items():
            if name in existing:
                raise ManifestError(
                    f"{key} {name!r} already exists in {op}; a proposal only adds",
                    file=str(proposal),
                    pointer=f"/packages/{op}/{key}/{name}",
                )
            existing[name] = value
    ids = {v.get("id") for v in raw.get("variants", [])}
    for i, variant in enumerate(additions.get("variants", [])):
        if variant.get("id") in ids:
            raise ManifestError(
                f"variant {variant.get('id')!r} already exists in {op}; a proposal only adds",
                file=str(proposal),
                pointer=f"/packages/{op}/variants/{i}/id",
            )
        raw["variants"].append(variant)
    for name, source in additions.get("templates", {}).items():
        pointer = f"/packages/{op}/templates/{name}"
        if (dst / name).exists():
            raise ManifestError(
                f"template {name!r} already exists in {op}; a proposal only adds", file=str(proposal), pointer=pointer
            )
        # a file beside the proposal (confined to its folder, size-capped), never one elsewhere
        text = read_confined(
            proposal.parent,
            proposal.parent / source,
            MAX_PACKAGE_FILE,
            lambda message, **_: ManifestError(f"{source}: {message}", file=str(proposal), pointer=pointer),  # noqa: B023 (called within this iteration, never after it)
        )
        (dst / name).write_bytes(text)
    path.write_text(json.dumps(raw, indent=2) + "\n")
    return dst, op


#: The vec4 body of the shipped GELU template, and the body :func:`vec4_per_thread` puts in its place in the copy:
#: no shipped plan handles several vec4 per invocation, so no shipped template carries that path.
VEC4_BODY = "  if (i >= params.count) { return; }\n  y[i] = {{ vectorScalar }}(gelu4(load4(i)));\n"
PER_THREAD_BODY = """\
  // {{ vecPerThread }} vec4 per invocation, strided by the workgroup so every load stays coalesced.
  let first = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WORKGROUP_SIZE * {{ vecPerThread }}u + lid;
  for (var k = 0u; k < {{ vecPerThread }}u; k++) {
    let j = first + k * WORKGROUP_SIZE;
    if (j < params.count) { y[j] = {{ vectorScalar }}(gelu4(load4(j))); }
  }
"""


def vec4_per_thread(package_dir: Path, count: int, into: Path) -> Path:
    """A copy whose vec4 variants handle ``count`` vec4 per invocation.

    The manifest change this measures: constant ``vecPerThread`` and dispatch threads
    ``ceilDiv(numel(shapes.X), 4 * vecPerThread)`` in every variant with ``vec4 == true``; in the copy's
    templates, the vec4 body (:data:`VEC4_BODY`) becomes a loop over ``vecPerThread`` vec4.
    """
    dst, path, raw = _copy(Path(package_dir), Path(into), f"x{count}")
    shaders = set()
    for variant in raw["variants"]:
        if variant.get("constants", {}).get("vec4") is True:
            variant["constants"]["vecPerThread"] = count
            for p in variant["passes"]:
                p["dispatch"]["threads"] = "ceilDiv(numel(shapes.X), 4 * vecPerThread)"
                shaders.add(p["shader"])
    for name in sorted(shaders):
        template = dst / name
        text = read_confined(dst, template, MAX_PACKAGE_FILE).decode("utf-8")
        if text.count(VEC4_BODY) != 1:
            raise ManifestError(
                f"expected the vec4 body `{VEC4_BODY.strip()}` once, to loop over vecPerThread vec4 per invocation",
                file=str(Path(package_dir) / name),
            )
        template.write_text(text.replace(VEC4_BODY, PER_THREAD_BODY))
    path.write_text(json.dumps(raw, indent=2) + "\n")
    return dst
