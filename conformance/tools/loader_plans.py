"""The JavaScript loader's plans against the suite's, with no GPU: every golden call planned by both.

``compare_package(package, cases, engine)`` plans each case's call with :class:`~conformance.engine.planner.Planner`
and with the loader's planner in Node (``loader_plan.mjs``, one process for a whole run), and returns the
differences: the variant, each pass's constants, bindings (with the packed uniform bytes and fields) and dispatch,
the outputs; for a refused call the reason and, for ``no-variant``, the chain of false predicates per variant.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from conformance.config import REPO_LOADER
from conformance.engine.call import make_call
from conformance.engine.package import Package
from conformance.engine.planner import Planner
from conformance.errors import ContractError, ExpressionError
from conformance.tools.jsjinja import EngineUnavailable, JsJinja, locate

SCRIPT = Path(__file__).with_name("loader_plan.mjs")
PLAN_MODULE = Path("src") / "plan.js"


@dataclass(frozen=True)
class Difference:
    case: str
    field: str        # a path into the plan: "passes[0].bindings[2].fields.count"
    python: object
    js: object

    def __str__(self) -> str:
        return f"{self.case}: {self.field}: Python {self.python!r}, JavaScript {self.js!r}"


class LoaderPlanner(JsJinja):
    """One Node process running ``loader_plan.mjs`` on a loader's planner module (JsJinja's JSON-lines protocol)."""

    def __init__(self, module: Path, node: str):
        self.version, self.label = "loader", f"loader {module}"
        self._command = [node, str(SCRIPT), module.resolve().as_uri()]
        self._start()


def open_planner(loader: Path | None = None) -> LoaderPlanner:
    """Node planning with ``loader``'s planner (default: the repository's ``loader/``), or EngineUnavailable."""
    node = shutil.which("node")
    if node is None:
        raise EngineUnavailable("no node on PATH")
    locate()  # the loader imports @huggingface/jinja: say so when it is not installed
    module = Path(loader or REPO_LOADER) / PLAN_MODULE
    if not module.is_file():
        raise EngineUnavailable(f"no loader planner at {module}")
    return LoaderPlanner(module, node)


def call_of(case) -> dict:
    """A case's call as the loader takes it (its profile as {limits, features})."""
    inputs = {role: None if arg is None else {"shape": list(arg[0]), "dtype": arg[1]}
              for role, arg in case.inputs.items()}
    return {"inputs": inputs, "attributes": dict(case.attributes), "tunables": dict(case.tunables),
            "profile": {"limits": dict(case.profile.limits), "features": sorted(case.profile.features)}}


def python_result(planner: Planner, case) -> dict:
    try:
        plan = planner.plan(make_call(planner.manifest, case.call_args(), case.profile, case.tunables))
    except ContractError as err:
        return {"error": {"name": "ContractError", "reason": err.reason, "failures": getattr(err, "failures", None)}}
    except ExpressionError as err:
        return {"error": {"name": "ExpressionError", "reason": None, "pointer": err.pointer}}
    summary = plan.as_dict()
    for p, out in zip(plan.passes, summary["passes"]):
        out["constants"] = dict(p.constants)
    return {"plan": summary}


def chain(why: str) -> str:
    """The false predicates of a rejection's explanation, outermost first: ``baseOk > buffersFit``."""
    return " > ".join(why.split(" is false: ")[:-1])


def differences(case_id: str, python: dict, js: dict) -> list[Difference]:
    if "plan" in python and "plan" in js:
        return list(_diff(case_id, "", python["plan"], js["plan"]))
    if "error" in python and "error" in js:
        p, j = python["error"], js["error"]
        if p["name"] != j["name"] or p["reason"] != j["reason"]:
            return [Difference(case_id, "rejection", f"{p['name']}({p['reason']})",
                               f"{j['name']}({j['reason']}): {j.get('message')}")]
        if p["reason"] == "no-variant":
            pf = {v: chain(w) for v, w in p["failures"].items()}
            jf = {v: chain(w) for v, w in (j.get("failures") or {}).items()}
            return list(_diff(case_id, "failures", pf, jf))
        return []
    (pk, pv), (jk, jv) = next(iter(python.items())), next(iter(js.items()))
    return [Difference(case_id, "outcome", _outcome(pk, pv), _outcome(jk, jv))]


def _outcome(kind: str, value: dict) -> str:
    if kind == "plan":
        return f"accepted: variant {value['variant']}"
    return f"{value.get('name')}({value.get('reason')}): {value.get('message', '')}".rstrip(": ")


def _same(a, b) -> bool:
    """Equal as JSON values: an integral float equals the integer (one number in JavaScript), a bool only a bool."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return a == b


def _diff(case_id: str, path: str, a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            where = f"{path}.{key}" if path else key
            if key not in b:
                yield Difference(case_id, where, a[key], "<missing>")
            elif key not in a:
                yield Difference(case_id, where, "<missing>", b[key])
            else:
                yield from _diff(case_id, where, a[key], b[key])
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            yield Difference(case_id, f"{path} (length)", list(a), list(b))
        else:
            for i, (x, y) in enumerate(zip(a, b)):
                yield from _diff(case_id, f"{path}[{i}]", x, y)
    elif not _same(a, b):
        yield Difference(case_id, path, a, b)


def compare_package(package: Package, cases, engine: JsJinja) -> list[Difference]:
    """Every case planned by both planners; the differences (empty: the loader plans as the suite does)."""
    planner = Planner(package.manifest)
    raw = package.root.joinpath("manifest.json").read_text(encoding="utf-8")
    answer = engine.request({"manifest": json.loads(raw), "file": f"{package.name}/manifest.json",
                             "calls": [call_of(c) for c in cases]})
    out: list[Difference] = []
    for case, js in zip(cases, answer):
        out += differences(case.id, python_result(planner, case), js)
    return out
