"""A JavaScript loader's plan against the suite's: the differences, field by field, with both values; and what
the loader dispatched against the plan's passes.

Used by the Node planning check (``conformance/tools/loader_plans.py``) and by the ``js-loader`` implementation
(``conformance/impls/js_loader/loader.py``), which judges the plan a loader made in the browser and the work the page
saw it do on its device (:func:`dispatch_problems`).
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.engine.planner import Planner
from conformance.errors import ContractError, ExpressionError, NoVariantError


@dataclass(frozen=True)
class Difference:
    case: str
    field: str  # a path into the plan: "passes[0].bindings[2].fields.count"
    python: object
    js: object

    def __str__(self) -> str:
        return f"{self.case}: {self.field}: Python {self.python!r}, JavaScript {self.js!r}"


def call_of(case) -> dict:
    """A case's call as the loader takes it (its profile as {limits, features})."""
    inputs = {
        role: None if arg is None else {"shape": list(arg[0]), "dtype": arg[1]} for role, arg in case.inputs.items()
    }
    return {
        "inputs": inputs,
        "attributes": dict(case.attributes),
        "tunables": dict(case.tunables),
        "profile": {"limits": dict(case.profile.limits), "features": sorted(case.profile.features)},
    }


def python_result(planner: Planner, case) -> dict:
    return python_outcome(planner, case)[1]


def python_outcome(planner: Planner, case) -> tuple:
    """(the suite's Plan of the case or None, :func:`python_result`'s dict of it)."""
    try:
        plan = planner.plan_case(case.call_args(), case.profile, case.tunables)
    except ContractError as err:
        return None, {
            "error": {
                "name": "ContractError",
                "reason": err.reason,
                "failures": err.failures if isinstance(err, NoVariantError) else None,
            }
        }
    except ExpressionError as err:
        return None, {"error": {"name": "ExpressionError", "reason": None, "pointer": err.pointer}}
    summary = plan.as_dict()
    for p, out in zip(plan.passes, summary["passes"]):
        out["constants"] = dict(p.constants)
    return plan, {"plan": summary}


def differences(case_id: str, python: dict, js: dict) -> list[Difference]:
    if "plan" in python and "plan" in js:
        return list(_diff(case_id, "", python["plan"], js["plan"]))
    if "error" in python and "error" in js:
        p, j = python["error"], js["error"]
        if p["name"] != j["name"] or p["reason"] != j["reason"]:
            return [
                Difference(
                    case_id,
                    "rejection",
                    f"{p['name']}({p['reason']})",
                    f"{j['name']}({j['reason']}): {j.get('message')}",
                )
            ]
        if p["reason"] == "no-variant":  # each variant's first false predicate, with the values, as the suite says
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


# -- what the loader dispatched ---------------------------------------------------------------------------------------
def _runs(workgroups) -> bool:
    return isinstance(workgroups, (list, tuple)) and all(isinstance(n, int) and n > 0 for n in workgroups)


def dispatched(work: dict) -> list[dict]:
    """The dispatches of a kernel() call that ran work: submitted on the page's device, indirect or of at least one
    workgroup (a dispatch of zero workgroups runs nothing, as a plan's empty pass dispatches nothing)."""
    return [
        d
        for d in work.get("dispatches") or []
        if isinstance(d, dict) and (d.get("indirect") or _runs(d.get("workgroups")))
    ]


def _lines(text: str) -> list[tuple[int, str]]:
    """(line number, the line) of WGSL without what layout alone makes: indentation, runs of blanks, trailing blanks
    and empty lines (line breaks stay: one ends a // comment)."""
    return [(n, " ".join(line.split())) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def wgsl_difference(rendered: str, compiled: str) -> str | None:
    """None where ``compiled`` is ``rendered`` up to layout, else where they first differ."""
    if rendered == compiled:
        return None
    ours, theirs = _lines(rendered), _lines(compiled)
    if [line for _, line in ours] == [line for _, line in theirs]:
        return None
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a[1] != b[1]), min(len(ours), len(theirs)))
    shown = lambda lines: f"line {lines[at][0]} {lines[at][1][:160]!r}" if at < len(lines) else "its end"  # noqa: E731
    return f"compiled {shown(theirs)}, rendered {shown(ours)}"


def dispatch_problems(passes: list[dict], texts: list, work: dict) -> list[str]:
    """Why what the page saw a kernel() call do on its device (``work``, page_loader.mjs's ``watchDevice``) is not the
    plan's work: ``passes`` the plan's passes as the golden case expects them (``{name, workgroups, ...}``),
    ``texts`` the WGSL the package renders for each (None where it was not rendered). A pass of zero workgroups
    dispatches nothing; every other pass is one dispatch on the page's device, in order, of its workgroup counts,
    of a pipeline compiled from its WGSL without overridden constants; and each output kernel() returned must be
    what the dispatched kernel left in its output binding. Empty: the outputs are the dispatched kernels'."""
    want = [(p, text) for p, text in zip(passes, texts) if _runs(list(p.get("workgroups") or ()))]
    ran = dispatched(work)
    shaders = work.get("shaders") if isinstance(work.get("shaders"), list) else []
    problems = (
        [
            f"WebGPU reported {len(work['errors'])} error(s) that no error scope caught during kernel(), first: "
            f"{str(work['errors'][0])[:300]}"
        ]
        if work.get("errors")
        else []
    )
    planned = ", ".join(f"{p['name']} {list(p['workgroups'])}" for p, _ in want)
    if not ran:
        if want:
            never = int(work.get("unsubmitted") or 0)
            problems.append(
                "the loader dispatched nothing on the page's device"
                + (f" ({never} dispatch(es) encoded but never submitted)" if never else "")
                + f": its outputs were not computed by a kernel (the plan dispatches {planned})"
            )
        return problems
    if len(ran) != len(want):
        got = ", ".join("indirect" if d.get("indirect") else str(list(d["workgroups"])) for d in ran)
        problems.append(
            f"the loader dispatched {len(ran)} kernel(s) on the page's device ({got}), the plan "
            f"{len(want)} ({planned or 'none: every pass is empty'})"
        )
        return problems
    for i, (d, (p, text)) in enumerate(zip(ran, want)):
        where = f"dispatch {i + 1} (pass {p['name']})"
        if d.get("indirect"):
            problems.append(
                f"{where} is indirect (dispatchWorkgroupsIndirect): its workgroup counts cannot be held "
                f"to the plan's {list(p['workgroups'])}"
            )
        elif list(d["workgroups"]) != list(p["workgroups"]):
            problems.append(f"{where} ran {list(d['workgroups'])} workgroups, the plan {list(p['workgroups'])}")
        shader = d.get("shader")
        if not isinstance(shader, int) or not 0 <= shader < len(shaders):
            problems.append(
                f"{where}: its pipeline was not made through the device the loader was given, so "
                f"what it runs is unknown"
            )
        elif text is not None:
            differs = wgsl_difference(text, str(shaders[shader]))
            if differs:
                problems.append(
                    f"{where}: its pipeline's WGSL is not what the package renders for this plan: {differs}"
                )
        if d.get("constants"):
            problems.append(f"{where}: its pipeline overrides constants of the WGSL ({d['constants']})")
    for role, tie in sorted((work.get("outputs") or {}).items()):
        if isinstance(tie, dict) and tie.get("same") is False:
            problems.append(
                f"output {role}: kernel() returned other values than the dispatched kernel left in its "
                f"output binding (first at element {tie.get('element')} of {tie.get('elements')}): "
                f"they were not computed by the kernel"
            )
        elif isinstance(tie, dict) and tie.get("why"):
            problems.append(f"{tie['why']}: what kernel() returned cannot be tied to the dispatched kernel")
    return problems


def evidence_of(work: dict, passes: list[dict], texts: list) -> str:
    """What a passing case's values rested on, given :func:`dispatch_problems` found nothing (same arguments)."""
    ran = dispatched(work)
    if not ran:
        return "nothing dispatched, as planned (every pass is empty)"
    unrendered = any(text is None for p, text in zip(passes, texts) if _runs(list(p.get("workgroups") or ())))
    ties = sorted((work.get("outputs") or {}).items())
    sampled = [
        f"{role}: {t['bytes']} of {t['of']} bytes compared"
        for role, t in ties
        if isinstance(t, dict) and t.get("same") and t.get("bytes") != t.get("of")
    ]
    return (
        f"values of dispatched kernels: {len(ran)} dispatch(es) on the page's device as planned, "
        + ("their WGSL not compared (the suite did not render it)" if unrendered else "of the WGSL the package renders")
        + ", the outputs what they left in their bindings"
        + (f" ({', '.join(sampled)})" if sampled else "")
    )
