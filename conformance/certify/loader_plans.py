"""A JavaScript loader's plan against the suite's: the differences, field by field, with both values.

Used by the Node planning check (``conformance/tools/loader_plans.py``) and by the ``js-loader`` implementation
(``conformance/certify/js_loader.py``), which judges the plan a loader made in the browser.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.engine.call import make_call
from conformance.engine.planner import Planner
from conformance.errors import ContractError, ExpressionError


@dataclass(frozen=True)
class Difference:
    case: str
    field: str        # a path into the plan: "passes[0].bindings[2].fields.count"
    python: object
    js: object

    def __str__(self) -> str:
        return f"{self.case}: {self.field}: Python {self.python!r}, JavaScript {self.js!r}"


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


def differences(case_id: str, python: dict, js: dict) -> list[Difference]:
    if "plan" in python and "plan" in js:
        return list(_diff(case_id, "", python["plan"], js["plan"]))
    if "error" in python and "error" in js:
        p, j = python["error"], js["error"]
        if p["name"] != j["name"] or p["reason"] != j["reason"]:
            return [Difference(case_id, "rejection", f"{p['name']}({p['reason']})",
                               f"{j['name']}({j['reason']}): {j.get('message')}")]
        if p["reason"] == "no-variant":   # each variant's first false predicate, with the values, as the suite says
            return list(_diff(case_id, "failures", p["failures"], j.get("failures") or {}))
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
        for key in [*a, *(k for k in b if k not in a)]:  # the suite's order: variant first
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
