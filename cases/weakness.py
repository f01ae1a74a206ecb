"""Where a package's cases are weaker than they look, each with what to add (``python -m cases --coverage``, and
the conformance report through :func:`of_package`).

* a case that compares no element: every output element is unconstrained for its data (a non-finite value in every
  row of a row op, say), so the values check passes whatever the kernel writes;
* families left empty for want of a record (the op's own distributions, ``values-op``; the row families);
* a row-indexed dispatch on an op its record declares ``elementwise``: threads that follow the row count rather
  than the element count mean the kernel works by rows, so non-finite values, multi-row limits and row splits
  need ``structure="rows"`` to be generated;
* a ``rows`` op without data recipes: rows far from zero mean (LayerNorm) or of large spread (Softmax) are where
  one-pass and cancelling formulas fail;
* a template branch, loop body or macro that no case renders (``dead-template-branch``, from the template coverage
  computed by rendering, ``conformance.shader.branches``): code a consumer downloads that no case checks;
* one that only plans dispatching nothing render (``idle-template-branch``: empty tensors): in the WGSL, never run.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from cases.calls import outcome
from cases.conditions import Analysis
from cases.data import make_inputs
from cases.families import FAMILY_NAMES, Ctx
from cases.model import Case
from conformance.engine.planner import Planner

#: Cases above this many input elements are not recomputed for the no-compare check (their families have
#: smaller siblings with the same data recipe).
MAX_RECOMPUTED_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class Weakness:
    kind: str  # no-compare | empty-family | row-dispatch-elementwise | rows-without-data | *-template-branch
    message: str  # what is weak and what to add

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"

    def as_dict(self, package: str) -> dict:
        """As a report carries it: ``{package, kind, message}``."""
        return {"package": package, "kind": self.kind, "message": self.message}


def family_counts(cases: list[Case]) -> dict[str, int]:
    """Family -> cases serving it, for every family of FAMILY_NAMES (0 for those no case serves)."""
    served = Counter(f for c in cases for f in set(c.families))  # each case's families worked out once
    return {f: served[f] for f in FAMILY_NAMES}


def of_package(package, cases: list[Case], ctx: Ctx | None = None) -> list[Weakness]:
    """The weaknesses of ``package``'s cases (generated, or loaded from its golden file)."""
    m = package.manifest
    families = {f: n for f, n in family_counts(cases).items() if n}
    return weaknesses(ctx or Ctx(m, Planner(m), Analysis(m)), cases, families)


def weaknesses(ctx: Ctx, cases: list[Case], families: dict[str, int]) -> list[Weakness]:
    record = ctx.record
    out = no_compare(cases, record) + empty_families(ctx, families)
    if record is not None and not record.rows:
        out += row_dispatch(ctx, cases)
    if record is not None and record.rows and not record.data:
        out.append(
            Weakness(
                "rows-without-data",
                f"{record.op} is a rows op without data recipes: add DataRecipes "
                f"(OpRecord.data) for rows far from zero mean and of large spread, "
                f"where one-pass and cancelling formulas fail",
            )
        )
    return out


def report_flags(package, cases: list[Case]) -> list[dict]:
    """:func:`of_package` as a conformance report carries it (``{package, kind, message}`` each). A record whose
    reference raises on the cases' data is one flag, not the package's failure (its cases fail with the error)."""
    try:
        return [w.as_dict(package.name) for w in of_package(package, cases)]
    except Exception as err:  # noqa: BLE001 -- an outside record's reference: the flags are a courtesy
        return [
            {
                "package": package.name,
                "kind": "not-assessed",
                "message": f"weakness not assessed: {type(err).__name__}: {err}",
            }
        ]


def dead_branches(coverages) -> list[Weakness]:
    """A ``dead-template-branch`` flag per branch, loop body or macro of ``coverages`` (``TemplateCoverage``s,
    pooled over packages sharing a template) that no case renders, and an ``idle-template-branch`` flag per one
    rendered only into passes that dispatch nothing."""
    return [dead_branch(c, b) for c in coverages for b in c.dead] + [
        idle_branch(c, b) for c in coverages for b in c.idle
    ]


def idle_branch(coverage, branch) -> Weakness:
    """The flag of a ``branch`` of ``coverage`` that only plans dispatching nothing render (empty tensors): the
    code is in the WGSL, but no invocation runs it, so a bug there fails no case."""
    ids = coverage.hits.get(branch, [])
    return Weakness(
        "idle-template-branch",
        f"{branch.where(coverage.root)}: {branch.kind} `{branch.condition}`: "
        f"rendered only into passes that dispatch nothing ({len(ids)} case(s), "
        f"e.g. {ids[0] if ids else '-'}): no invocation runs it; add a case "
        f"whose plan runs it, or make it unreachable",
    )


def dead_branch(coverage, branch) -> Weakness:
    """The flag of one dead ``branch`` of ``coverage``: its file, line and the condition that never held."""
    return Weakness(
        "dead-template-branch",
        f"{branch.where(coverage.root)}: {branch.kind} `{branch.condition}`: no "
        f"golden case renders it (the condition never held); add a case whose "
        f"plan renders it, or remove it (a proposal carries its own template)",
    )


def no_compare(cases: list[Case], record) -> list[Weakness]:
    """Accepted cases with data whose reference leaves every output element unconstrained."""
    if record is None:
        return []
    found = []
    for case in cases:
        if not case.accepted or case.heavy:
            continue
        sizes = [math.prod(a[0]) for a in case.inputs.values() if a is not None]
        if not sum(sizes) or sum(sizes) > MAX_RECOMPUTED_ELEMENTS:
            continue
        with np.errstate(all="ignore"):
            expected = record.compute(make_inputs(case), case.attributes or None)
        arrays = [np.asarray(v) for v in expected.values()]
        if any(a.size for a in arrays) and not any(np.isfinite(a).any() for a in arrays):
            found.append(case.id)
    if not found:
        return []
    fix = (
        "declare structure='rows' in the op record (non-finite values then go in one row only)"
        if not record.rows
        else "give the case rows without special values"
    )
    shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return [
        Weakness(
            "no-compare",
            f"{len(found)} accepted case(s) compare no element (every output element is "
            f"unconstrained: {record.word('unconstrained')}): {shown}; {fix}",
        )
    ]


def empty_families(ctx: Ctx, families: dict[str, int]) -> list[Weakness]:
    """Families that are empty because the package has no record."""
    if ctx.record is not None:
        return []  # values-op without data recipes: a weakness for rows ops (rows-without-data)
    empty = [f for f in ("values-op", "values-partial-nonfinite") if not families.get(f)]
    return [
        Weakness(
            "empty-family",
            f"no op record for {ctx.m.op_id}: {', '.join(empty)} cannot be generated "
            f"(nor the row families) and no value is checked; install the distribution "
            f"that registers it, or register it",
        )
    ]


def row_dispatch(ctx: Ctx, cases: list[Case]) -> list[Weakness]:
    """Variants whose threads change between [2r, c] and [r, 2c] (same elements, same variant): they dispatch by
    rows, on an op the record declares elementwise."""
    seen, found = set(), []
    for case in cases:
        variant = case.expect.get("variant")
        if not case.accepted or case.heavy or variant in seen or case.profile.name != "baseline" or case.tunables:
            continue
        shape, dtype = case.inputs[ctx.lead.role]
        if len(shape) < 2 or not math.prod(shape):
            continue
        rows, cols = math.prod(shape[:-1]), shape[-1]
        optional = any(a is not None for r, a in case.inputs.items() if ctx.m.input(r).optional)
        tall = outcome(ctx.planner, ctx.call((2 * rows, cols), dtype, optional=optional))
        wide = outcome(ctx.planner, ctx.call((rows, 2 * cols), dtype, optional=optional))
        if not (tall["outcome"] == wide["outcome"] == "accepted" and tall["variant"] == wide["variant"] == variant):
            continue
        seen.add(variant)
        if [p["threads"] for p in tall["passes"]] != [p["threads"] for p in wide["passes"]]:
            found.append(
                f"{variant} ({[p['threads'] for p in tall['passes']]} threads for [{2 * rows}, {cols}], "
                f"{[p['threads'] for p in wide['passes']]} for [{rows}, {2 * cols}])"
            )
    if not found:
        return []
    return [
        Weakness(
            "row-dispatch-elementwise",
            f"the record of {ctx.m.op_id} declares structure 'elementwise' but "
            f"variants dispatch by rows: {'; '.join(found)}; declare "
            f"structure='rows' so multi-row limits, row splits and non-finite "
            f"rows are generated",
        )
    ]
