"""What a certification rests on: every package, variant and dtype the run could check must have been checked.

A *cell* is a package, a variant its golden cases accept calls as, and a dtype. A cell is

* *checked* when one of its cases passed with its values compared against the reference (or, for a cell whose
  cases all have empty outputs, with its output shapes compared against the reference's);
* *not runnable here* when none of its cases could run as accepted: every one was planned again into a rejection
  for a device that lacks what it assumes (no ``shader-f16``, a smaller limit), skipped by the implementation, or
  not applicable to it;
* *unchecked* otherwise (its cases failed, were waived, or checked nothing): the result cannot be "conforms".

Heavy cases the run left out (no ``--run-heavy``) are named too, so that no variant a manifest can select goes
without a verdict: a cell whose cases with data were all left out as heavy is unchecked, "heavy only", even where
its empty-tensor cases passed (an output shape checks nothing of a kernel that only heavy calls select).

A package of the run none of whose cells is checked is unchecked as a whole, whatever the reason (every case
skipped, not applicable, planned into a rejection for this device, failed), and its entry says what happened to
its cases (:func:`what_happened`). A column with no checked cell at all is ``nothing-checked``
(:func:`conformance.certify.report.result_of`), never "conforms": a run that skipped, deselected or could not run
everything checked nothing, and its exit status says so.

A case that passed with outputs but *compared no element* (every reference element unconstrained for its data: a
non-finite value in every row of a row op) checked nothing either: its verdict says ``compared: 0`` and evidence
None, so it never makes a cell checked, and :func:`compared_nothing` names it for the report wherever it ran.
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


def _checked(cases: list[dict], heavy_left_out: list[dict]) -> bool:
    runnable = [v for v in cases if _runnable(v)]
    needs = "shapes" if all(v.get("empty") for v in runnable) and not heavy_left_out else "values"
    return any(v["status"] == "passed" and v.get("evidence") in (needs, "values") for v in runnable)


def _why_unchecked(cases: list[dict], heavy_left_out: list[dict]) -> str:
    runnable = [v for v in cases if _runnable(v)]
    if heavy_left_out and all(v["status"] == "passed" for v in runnable):
        return (
            f"heavy only: its {len(heavy_left_out)} case(s) with data are heavy and were left out, and no other "
            f"case checked its values (run with --run-heavy)"
        )
    if all(v["status"] == "passed" for v in runnable):
        return "its cases passed without a value checked against the reference"
    return f"no case passed with its values checked: {what_happened(runnable)}"


def _value_checked(v: dict) -> bool:
    """The case was dispatched and its outputs compared against the reference (whether or not they matched)."""
    return bool(v.get("compared")) or v.get("worst_ratio") is not None


def what_happened(cases: list[dict]) -> str:
    """What became of ``cases``, in counts a user acts on: dispatched and value-checked (passed or failed), failed
    before a value check, planned into a rejection for this device, skipped or not applicable (with the first
    reason), not run. "84 dispatched and value-checked, failed" sends the user to the kernel; "84 skipped: no
    shader-f16" to the set-up."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for v in cases:
        if v["status"] in NOT_RUN_HERE:
            groups[v["status"]].append(v)
        elif v["status"] == "not-run":
            groups["not run"].append(v)
        elif v.get("replanned") and v["variant"] == "rejected":
            groups["planned into a rejection for this device"].append(v)
        elif v["variant"] == "rejected" and v["status"] == "passed":
            groups["rejected as the manifest says (no output to check)"].append(v)
        elif _value_checked(v):
            groups[f"dispatched and value-checked, {'passed' if v['status'] == 'passed' else 'failed'}"].append(v)
        elif v["status"] in ("passed", "xfailed"):
            groups["passed" if v["status"] == "passed" else "failed, waived"].append(v)
        else:
            groups["failed before a value check"].append(v)
    parts = []
    for what, mine in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        reason = (
            next((v.get("replanned") or v.get("detail") for v in mine if v.get("replanned") or v.get("detail")), None)
            if what
            in ("skipped", "not-applicable", "planned into a rejection for this device", "failed before a value check")
            else None
        )
        parts.append(f"{len(mine)} {what}" + (f" ({reason.splitlines()[0][:200]})" if reason else ""))
    return "; ".join(parts) or "no case of it ran"


def _why_not_runnable(cases: list[dict]) -> str:
    why = next((v.get("replanned") for v in cases if v.get("replanned")), None) or next(
        (v.get("detail") for v in cases if v["status"] in NOT_RUN_HERE and v.get("detail")), None
    )
    return (why or "no case ran as accepted").splitlines()[0][:300]


def compared_nothing(verdicts) -> list[dict]:
    """The cases that passed with outputs but compared no element: ``{id, package, column?, why}`` each."""
    return [
        {
            "id": v["id"],
            "package": v["package"],
            **({"column": v["column"]} if v.get("column") else {}),
            "why": v.get("detail") or "compared no element",
        }
        for v in sorted(verdicts, key=lambda v: v["id"])
        if v["status"] == "passed" and v.get("compared") == 0 and not v.get("empty")
    ]


def assess(verdicts, left_out=()) -> dict:
    """``{"unchecked": [...], "not_runnable": [...], "checked": n, "compared_nothing": [...]}``, each of the first
    two's entries ``{package, variant, dtype, cases, why}`` (a package with no checked cell is one entry with variant
    and dtype None); ``checked`` counts the checked cells; ``compared_nothing`` is :func:`compared_nothing`.
    ``left_out``: the heavy cases the run selected but did not run, as :func:`left_out_entry` gives them."""
    found = cells(verdicts)
    heavy = cells(v for v in left_out if not v.get("empty"))
    unchecked, not_runnable, checked_packages, checked = [], [], set(), 0
    for key in sorted(set(found) | set(heavy)):
        (package, variant, dtype), cases, held = key, found.get(key, []), heavy.get(key, [])
        entry = {"package": package, "variant": variant, "dtype": dtype, "cases": len(cases) + len(held)}
        if cases and not any(_runnable(v) for v in cases):
            not_runnable.append({**entry, "why": _why_not_runnable(cases)})
        elif _checked(cases, held):
            checked_packages.add(package)
            checked += 1
        else:
            unchecked.append({**entry, "why": _why_unchecked(cases, held)})
    packages = sorted({v["package"] for v in verdicts if v.get("package") and v["status"] != "not-run"})
    for package in packages:
        if package not in checked_packages:
            mine = [v for v in verdicts if v.get("package") == package]
            unchecked.append(
                {
                    "package": package,
                    "variant": None,
                    "dtype": None,
                    "cases": len(mine),
                    "why": f"no case passed a value check on this device: {what_happened(mine)}",
                }
            )
    return {
        "unchecked": unchecked,
        "not_runnable": not_runnable,
        "checked": checked,
        "compared_nothing": compared_nothing(verdicts),
    }


def left_out_entry(verdict: dict) -> dict:
    """What a report keeps of a case it did not run (a heavy one without ``--run-heavy``): enough to name its cell."""
    keep = ("id", "package", "expected_variant", "dtype", "empty", "column")
    return {k: verdict[k] for k in keep if verdict.get(k) is not None}


def cell_line(entry: dict) -> str:
    """One entry of ``unchecked`` or ``not_runnable``: package (/ variant / dtype), its case count and why."""
    where = entry["package"] + (f" / {entry['variant']} / {entry['dtype']}" if entry["variant"] else "")
    return f"{where} ({entry['cases']} case(s)): {entry['why']}"


#: The heading of the report's section of weakness flags (Markdown, HTML, merge).
WEAK_TITLE = "Weaker than it looks"
WEAK_NOTE = "Cases that pass but check less than they seem to, each with what to add"


def weak_of(reports) -> list[dict]:
    """The case generator's weakness flags (``{package, kind, message}``, cases.weakness) of ``reports``, each
    once: every column of a run, and every machine's report of the same packages, carries the same flags."""
    seen: dict[tuple, dict] = {}
    for data in reports:
        for w in data.get("weak") or []:
            seen.setdefault((w.get("package"), w.get("kind"), w.get("message")), w)
    return list(seen.values())


def flag_lines(weak, compared_nothing) -> list[str]:
    """What is weaker than it looks, one plain line each (the caller quotes them): the generator's flags, then the
    cases that ran and compared no element."""
    return [f"{w['package']}: {w['kind']}: {w['message']}" for w in weak] + [
        f"{c['id']}" + (f" on {c['column']}" if c.get("column") else "") + f": {c['why']}" for c in compared_nothing
    ]
