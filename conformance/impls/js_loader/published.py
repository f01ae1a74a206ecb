"""A package as the card publishes it (``build/webgpu/``): its files and a metadata.json of their sha256, for a
JavaScript loader to check before it plans or renders anything (``export`` writes the same digests)."""

from __future__ import annotations

import json

from conformance.engine.package import Package, load_package, package_versions
from conformance.errors import ManifestError
from conformance.files import MAX_PACKAGE_FILE, read_confined


def template_digests(package: Package) -> dict[str, str | None]:
    """sha256 of each template the manifest names (None: unreadable), by file name."""
    return {name: digest for name, digest in package.identity["files"].items() if name != "manifest.json"}


def published_files(package: Package) -> dict[int, dict[str, bytes]]:
    """Every published version of ``package``'s op (version 1 in ``<op>/``, N in ``<op>@N/``), each as the card's
    ``build/webgpu/``: metadata.json (the sha256 of the manifest and the templates), manifest.json, templates."""
    directory = package.root.parent.parent if package.root.name == "webgpu" else package.root
    specs = directory.parent
    op = package.manifest.op_id
    versions = package_versions(op, specs) or {package.version: directory}
    out = {}
    for version, root in versions.items():
        pkg = package if root == directory else load_package(root)
        files = {"manifest.json": read_confined(pkg.root, pkg.root / "manifest.json", MAX_PACKAGE_FILE, ManifestError)}
        for name in pkg.manifest.shaders:
            files[name] = pkg.read_template(name).encode("utf-8")
        meta = {
            "package": op,
            "version": version,
            "manifest": {"file": "manifest.json", "sha256": pkg.manifest.sha256},
            "templates": template_digests(pkg),
        }
        files["metadata.json"] = (json.dumps(meta, indent=1) + "\n").encode()
        out[version] = files
    return out
