"""What a certification rests on: every package, variant and dtype the run could check must have been checked.

A *cell* is a package, a variant its golden cases accept calls as, and a dtype. A cell is

* *checked* when one of its cases passed with its values compared against the reference (or, for a cell whose
  cases all have empty outputs, with its output shapes compared against the reference's);
* *not runnable here* when none of its cases could run as accepted: every one was planned again into a rejection
  for a device that lacks what it assumes (no ``shader-f16``, a smaller limit), skipped by the implementation, or
  not applicable to it;
* *unchecked* otherwise (its cases failed, were waived, or checked nothing): the result cannot be "conforms".

A package none of whose cells is checked (every cell not runnable, or none selected) is unchecked as a whole.
"""

from __future__ import annotations

from collections import defaultdict

#: Statuses of a case that ran nothing the cell could rest on, by the implementation's or the device's choice.
NOT_RUN_HERE = ("skipped", "not-applicable")


def cells(verdicts) -> dict:
    """(package, expected variant, dtype) -> the verdicts of its cases (golden-accepted cases only)."""
    out: dict = defaultdict(list)
    for v in verdicts:
        if v.get("expected_variant"):
            out[(v["package"], v["expected_variant"], v["dtype"])].append(v)
    return out


def _runnable(v: dict) -> bool:
    return v["variant"] != "rejected" and v["status"] not in NOT_RUN_HERE


def _checked(cases: list[dict]) -> bool:
    runnable = [v for v in cases if _runnable(v)]
    needs = "shapes" if all(v.get("empty") for v in runnable) else "values"
    return any(v["status"] == "passed" and v.get("evidence") in (needs, "values") for v in runnable)


def _why_unchecked(cases: list[dict]) -> str:
    runnable = [v for v in cases if _runnable(v)]
    statuses = sorted({v["status"] for v in runnable})
    if statuses == ["passed"]:
        return "its cases passed without a value checked against the reference"
    return f"no case passed with its values checked ({len(runnable)} case(s) ran: {', '.join(statuses)})"


def _why_not_runnable(cases: list[dict]) -> str:
    why = next((v.get("replanned") for v in cases if v.get("replanned")), None) or \
        next((v.get("detail") for v in cases if v["status"] in NOT_RUN_HERE and v.get("detail")), None)
    return (why or "no case ran as accepted").splitlines()[0][:300]


def assess(verdicts) -> dict:
    """``{"unchecked": [...], "not_runnable": [...], "checked": n}``, each entry ``{package, variant, dtype,
    cases, why}`` (a package with no checked cell is one entry with variant and dtype None); ``checked`` counts
    the checked cells."""
    found = cells(verdicts)
    unchecked, not_runnable, checked_packages, checked = [], [], set(), 0
    for (package, variant, dtype), cases in sorted(found.items()):
        entry = {"package": package, "variant": variant, "dtype": dtype, "cases": len(cases)}
        if not any(_runnable(v) for v in cases):
            not_runnable.append({**entry, "why": _why_not_runnable(cases)})
        elif _checked(cases):
            checked_packages.add(package)
            checked += 1
        else:
            unchecked.append({**entry, "why": _why_unchecked(cases)})
    packages = sorted({v["package"] for v in verdicts if v.get("package") and v["status"] != "not-run"})
    for package in packages:
        if package not in checked_packages and not all(v["status"] in NOT_RUN_HERE for v in verdicts
                                                       if v.get("package") == package):
            unchecked.append({"package": package, "variant": None, "dtype": None,
                              "cases": sum(1 for v in verdicts if v.get("package") == package),
                              "why": "nothing of this package was dispatched and value-checked on this device"})
    return {"unchecked": unchecked, "not_runnable": not_runnable, "checked": checked}
