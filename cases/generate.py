"""generate(package) -> cases: the condition search's witnesses plus every family, planned by the engine."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from cases.calls import CallSpec, outcome, scope_of
from cases.conditions import Analysis
from cases.data import Recipe, seed_for
from cases.extremes import EXTREME
from cases.families import FAMILIES, FAMILY_NAMES, Ctx, Item
from cases.model import Case, case_from, case_id
from cases.pool import build_pool
from cases.profiles import TWIN_PROFILES
from cases.search import Entry, Result, boundaries, search
from conformance.engine.package import Package
from conformance.engine.planner import Planner


@dataclass
class Derivation:
    """What generation worked out for one manifest (the coverage report reuses it)."""

    analysis: Analysis
    planner: Planner
    pool: Result
    cases: list[Case]


def entries(analysis: Analysis, planner: Planner, specs) -> list[Entry]:
    out = []
    for spec in specs:
        scope = scope_of(planner, spec)
        if scope is not None:
            out.append(Entry(spec, analysis.values(scope)))
    return out


def residue_items(ctx: Ctx, pool_entries: list[Entry]) -> list[Item]:
    """Per combination of residues of every ``x % k`` operand (numel and last dim separately), dtype and
    optional-input presence, the cheapest pool call with fitting companions."""
    moduli = ctx.analysis.moduli()
    if not moduli:
        return []
    best: dict[tuple, CallSpec] = {}
    for e in pool_entries:
        spec = e.spec
        if spec.profile != "baseline" or spec.tunables:
            continue
        shape, dtype = spec.arg(ctx.lead.role)
        fitting = ctx.call(shape, dtype).args()
        if any(a is not None and a != fitting[r] for r, a in spec.args().items()):
            continue
        scope = scope_of(ctx.planner, spec)
        residues = tuple(ctx.analysis.evaluate(op, scope) for op, _ in moduli)
        if any(not isinstance(v, int) for v in residues):
            continue
        key = (
            tuple(v % k for v, (_, k) in zip(residues, moduli)),
            dtype,
            tuple(a is None for a in spec.args().values()),
        )
        if key not in best or spec.cost() < best[key].cost():
            best[key] = spec
    return [Item("residues", spec) for spec in best.values()]


#: Accepted cases with data (multi-row ones for row ops) every variant should be reached by.
MIN_REACH = 3


def thin_variants(cases: list[Case], rows: bool) -> set[str]:
    """Variants reached by fewer than MIN_REACH accepted cases with data (multi-row ones for row ops)."""
    counts: dict[str, int] = {}
    for case in cases:
        if case.accepted and not case.heavy:
            shape = next(a for a in case.inputs.values() if a is not None)[0]
            if math.prod(shape) and (not rows or (len(shape) > 1 and math.prod(shape[:-1]) > 1)):
                counts[case.expect["variant"]] = counts.get(case.expect["variant"], 0) + 1
    return {v for v, n in counts.items() if n < MIN_REACH} | {
        c.expect["variant"] for c in cases if c.accepted and c.expect["variant"] not in counts
    }


def reach_items(ctx: Ctx, planner: Planner, cases: list[Case], thin: set[str]) -> list[Item]:
    """For each thin variant: its accepted calls with data, again with 2, 3 and 5 rows of the same last axis
    (for any op: more rows are more elements), kept where the variant is still the one selected."""
    out = []
    for case in cases:
        if not case.accepted or case.expect["variant"] not in thin or case.heavy:
            continue
        shape, dtype = case.inputs[ctx.lead.role]
        if not shape or not math.prod(shape):
            continue
        for rows in (2, 3, 5):
            spec = ctx.call(
                (rows,) + tuple(shape[-1:]),
                dtype,
                optional=any(a is not None for r, a in case.inputs.items() if ctx.m.input(r).optional),
                profile=case.profile.name,
                tunables=dict(case.tunables),
            )
            got = outcome(planner, spec)
            if got["outcome"] == "accepted" and got["variant"] == case.expect["variant"]:
                out.append(Item("reach", spec))
    return out


def twin_items(planner: Planner, items: list[Item]) -> list[Item]:
    """Each light accepted baseline item again on every TWIN_PROFILES profile where it selects another variant
    (same family and data): the feature's variants get the baseline's cases, and the baseline keeps its own."""
    out, seen = [], set()
    for item in items:
        spec = item.spec
        if spec.profile != "baseline" or spec.heavy or (spec, item.suffix) in seen:
            continue
        seen.add((spec, item.suffix))
        base = outcome(planner, spec)
        if base["outcome"] != "accepted":
            continue
        for name in TWIN_PROFILES:
            twin = spec.with_profile(name)
            got = outcome(planner, twin)
            if got["outcome"] == "accepted" and got["variant"] != base["variant"]:
                out.append(dataclasses.replace(item, spec=twin))
    return out


def derive(package: Package) -> Derivation:
    m = package.manifest
    analysis, planner = Analysis(m), Planner(m)
    ctx = Ctx(m, planner, analysis)
    pool_entries = entries(analysis, planner, build_pool(m, planner, analysis))
    pool = search(analysis, pool_entries)
    items: list[Item] = []
    for family in FAMILIES.values():
        items += family(ctx)
    witnesses = list(pool.witnesses.values()) + list(pool.reached.values())
    witnesses += boundaries(analysis, pool, pool_entries, lambda spec: scope_of(planner, spec))
    items += [Item("conditions", spec) for spec in sorted(dict.fromkeys(witnesses), key=lambda s: s.cost())]
    items += residue_items(ctx, pool_entries)
    items += twin_items(planner, items)
    cases = build_cases(package, planner, items)
    thin = thin_variants(cases, ctx.rows)
    if thin:
        extra = reach_items(ctx, planner, cases, thin)
        if extra:
            cases = build_cases(package, planner, items + extra)
    return Derivation(analysis, planner, pool, cases)


def build_cases(package: Package, planner: Planner, items: list[Item]) -> list[Case]:
    m = package.manifest
    expects: dict[CallSpec, dict] = {}
    merged: dict[str, tuple[Item, list[str], dict]] = {}
    for item in items:
        if item.spec not in expects:
            expects[item.spec] = outcome(planner, item.spec)
        expect = expects[item.spec]
        cid = case_id(m.case_prefix, item.spec, expect, item.suffix)
        if cid in merged:
            if item.family not in merged[cid][1]:
                merged[cid][1].append(item.family)
            continue
        merged[cid] = (item, [item.family], expect)
    order = {name: i for i, name in enumerate(FAMILY_NAMES)}
    cases = []
    for cid, (item, families, expect) in merged.items():
        families.sort(key=order.__getitem__)
        recipe = Recipe(
            seed_for(cid),
            item.dist,
            item.scale,
            item.special,
            item.special_rows,
            EXTREME if item.extremes else 0.0,
            item.extremes,
        )
        cases.append(case_from(m.package_id, m.name, families[0], item.spec, expect, cid, recipe, families))
    return cases


@dataclass(frozen=True)
class PlanningFailure:
    """One expression of a manifest that fails to evaluate for ``count`` generated calls (``first`` and its message
    the first of them)."""

    pointer: str
    message: str
    first: str
    count: int


def planning_failures(cases: list[Case]) -> list[PlanningFailure]:
    """The calls whose planning raised, grouped by expression (the first call's message shown), in case order."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        if case.planning_failed:
            groups.setdefault(case.expect["pointer"], []).append(case)
    return [PlanningFailure(ptr, found[0].expect["message"], found[0].id, len(found)) for ptr, found in groups.items()]


def generate(package: Package) -> list[Case]:
    """Every case for ``package``, in a stable order."""
    return derive(package).cases
