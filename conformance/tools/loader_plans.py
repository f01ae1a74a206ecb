"""The JavaScript loader's plans against the suite's, with no GPU: every golden call planned by both.

``compare_package(package, cases, engine)`` plans each case's call with the suite's planner and with the loader's
planner in Node (``loader_plan.mjs``, one process for a whole run), and returns the differences
(:mod:`conformance.impls.js_loader.plans`): the variant, each pass's constants, bindings (with the packed uniform
bytes and fields) and dispatch, the outputs; for a refused call the reason and, for ``no-variant``, each
variant's first false predicate with its values, as the message says it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conformance.config import loader_entry
from conformance.engine.package import Package
from conformance.engine.planner import Planner
from conformance.errors import ManifestError
from conformance.files import MAX_PACKAGE_FILE, read_confined
from conformance.impls.js_loader.plans import Difference, call_of, differences, python_result
from conformance.tools.jsjinja import EngineUnavailable, JsJinja, _entry, locate

SCRIPT = Path(__file__).with_name("loader_plan.mjs")


class LoaderPlanner(JsJinja):
    """One Node process running ``loader_plan.mjs`` on a loader's planner module (JsJinja's JSON-lines protocol),
    started by the first request: lint's worker processes each start their own, and the parent, which hands them
    the planner, starts none unless it plans too."""

    def __init__(self, module: Path, node: str, jinja: Path):
        self.version, self.label = "loader", f"loader {module}"
        self._command = [node, str(SCRIPT), module.resolve().as_uri(), _entry(jinja).as_uri()]
        self._owner = None


def open_planner(loader: Path | None = None) -> LoaderPlanner:
    """Node planning with the ``"./plan"`` entry of ``loader`` (a loader package's directory; default: the
    reference loader), or EngineUnavailable."""
    node = shutil.which("node")
    if node is None:
        raise EngineUnavailable("no node on PATH")
    jinja, _ = locate()  # the loader imports @huggingface/jinja: this one, wherever the loader is
    try:
        module = loader_entry("./plan", loader)
    except FileNotFoundError as err:
        raise EngineUnavailable(f"no loader planner: {err}") from None
    if not module.is_file():
        raise EngineUnavailable(f"no loader planner at {module}")
    return LoaderPlanner(module, node, jinja)


def compare_package(package: Package, cases, engine: JsJinja) -> list[Difference]:
    """Every case planned by both planners; the differences (empty: the loader plans as the suite does)."""
    planner = Planner(package.manifest)
    raw = read_confined(package.root, package.root / "manifest.json", MAX_PACKAGE_FILE, ManifestError)
    answer = engine.request(
        {"manifest": json.loads(raw), "file": f"{package.name}/manifest.json", "calls": [call_of(c) for c in cases]}
    )
    out: list[Difference] = []
    for case, js in zip(cases, answer):
        out += differences(case.id, python_result(planner, case), js)
    return out
