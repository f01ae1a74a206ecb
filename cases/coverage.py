"""Coverage of a manifest by its cases: variants reached, every condition shown true and false with the
variant's selection hinging on it (or why that is impossible), families present."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cases.calls import CallSpec
from cases.families import Ctx
from cases.generate import derive, entries
from cases.search import gap_reason, search
from cases.weakness import family_counts, of_package
from conformance.engine.package import Package
from conformance.ops.registry import find


@dataclass(frozen=True)
class ConditionCoverage:
    variant: str
    condition: str  # inlined source text of the atom
    origin: str  # where the variant reaches it ("when[0] > baseOk > buffersFit")
    value: bool
    case: str | None  # id of a case that shows it
    gap: str | None = None  # why no case can, when none does

    @property
    def infeasible(self) -> bool:
        return self.case is None and not (self.gap or "").startswith("not covered")


@dataclass
class Coverage:
    package: str
    variants: dict[str, str | None]  # variant -> id of a case selecting it
    conditions: list[ConditionCoverage]
    families: dict[str, int]  # family -> cases serving it
    not_applicable: list[str] = field(default_factory=list)
    reach: dict[str, tuple[int, int]] = field(default_factory=dict)  # variant -> (accepted with data, multi-row)
    rejections: dict[str, int] = field(default_factory=dict)  # rejection reason -> cases
    weak: list = field(default_factory=list)  # cases.weakness.Weakness: weaker than it looks, and what to add
    cases: list = field(default_factory=list, repr=False)  # the cases judged (for the template coverage)

    @property
    def thin(self) -> list[str]:
        """Variants reached by fewer than three accepted cases with data (multi-row ones where rows exist)."""
        return [v for v, (n, rows) in self.reach.items() if n < 3 or (self.rows and rows < 3)]

    rows: bool = False

    @property
    def unreachable(self) -> list[str]:
        return [v for v, c in self.variants.items() if c is None]

    @property
    def gaps(self) -> list[ConditionCoverage]:
        return [c for c in self.conditions if c.case is None]

    @property
    def feasible(self) -> list[ConditionCoverage]:
        return [c for c in self.conditions if not c.infeasible]

    @property
    def covered(self) -> list[ConditionCoverage]:
        return [c for c in self.conditions if c.case is not None]

    @property
    def complete(self) -> bool:
        return not self.unreachable and len(self.covered) == len(self.feasible)

    def report(self) -> str:
        lines = [
            f"{self.package}",
            f"  variants reached: {len(self.variants) - len(self.unreachable)}/{len(self.variants)}",
        ]
        for v, case in self.variants.items():
            lines.append(f"    {v}: {case}" if case else f"    {v}: UNREACHABLE (manifest defect: no call selects it)")
        lines.append("  reach by accepted cases with data (multi-row" + (")" if self.rows else ": not a row op)"))
        for v, (n, rows) in self.reach.items():
            flag = (
                "  THIN" + (" (only empty calls select it: nothing to compute)" if not n else "")
                if v in self.thin
                else ""
            )
            lines.append(f"    {v}: {n} accepted" + (f", {rows} multi-row" if self.rows else "") + flag)
        lines.append("  rejections: " + (", ".join(f"{r} {n}" for r, n in sorted(self.rejections.items())) or "none"))
        pct = 100.0 * len(self.covered) / max(1, len(self.feasible))
        lines.append(
            f"  conditions (variant x condition x true/false): {len(self.covered)} shown of "
            f"{len(self.feasible)} feasible ({pct:.0f}%), {len(self.conditions)} in all"
        )
        for c in self.gaps:
            tag = "infeasible" if c.infeasible else "MISSING"
            lines.append(f"    {tag}: {c.variant}: `{c.condition}` {str(c.value).lower()} ({c.origin}): {c.gap}")
        lines.append("  families: " + ", ".join(f"{f} {n}" for f, n in self.families.items()))
        if self.not_applicable:
            lines.append("  not applicable: " + ", ".join(self.not_applicable))
        lines += [f"  WEAK: {w}" for w in self.weak]
        return "\n".join(lines)


def coverage(package: Package) -> Coverage:
    d = derive(package)
    m = package.manifest
    by_spec: dict[CallSpec, str] = {}
    for case in d.cases:
        spec = CallSpec.of(m, case.inputs, case.profile.name, case.tunables, case.attributes)
        by_spec.setdefault(spec, case.id)
    shown = search(d.analysis, entries(d.analysis, d.planner, by_spec))
    conditions = []
    for dec in d.analysis.decisions:
        for atom in dec.atoms:
            a = d.analysis.atoms[atom]
            origin = next(o.split(": ", 1)[1] for o in a.origins if o.startswith(dec.variant + ": "))
            for value in (True, False):
                spec = shown.witnesses.get((dec.variant, atom, value))
                gap = None if spec else gap_reason(d.analysis, d.pool, dec.variant, atom, value)
                conditions.append(
                    ConditionCoverage(dec.variant, a.key, origin, value, by_spec[spec] if spec else None, gap)
                )
    variants = {dec.variant: by_spec.get(shown.reached.get(dec.variant)) for dec in d.analysis.decisions}
    counts = family_counts(d.cases)
    reach = {dec.variant: (0, 0) for dec in d.analysis.decisions}
    rejections: dict[str, int] = {}
    for case in d.cases:
        if not case.accepted:
            reason = case.expect.get("reason", case.expect["outcome"])  # planning-failed has no reason
            rejections[reason] = rejections.get(reason, 0) + 1
            continue
        shape = next(iter(a for a in case.inputs.values() if a is not None))[0]
        if case.heavy or math.prod(shape) == 0:
            continue
        n, rows = reach[case.expect["variant"]]
        reach[case.expect["variant"]] = (n + 1, rows + (len(shape) > 1 and math.prod(shape[:-1]) > 1))
    record = find(m.op_id)
    families = {f: n for f, n in counts.items() if n}
    weak = of_package(package, d.cases, Ctx(m, d.planner, d.analysis))
    return Coverage(
        m.op_id,
        variants,
        conditions,
        families,
        [f for f, n in counts.items() if not n],
        reach,
        rejections,
        weak,
        rows=bool(record and record.rows),
        cases=d.cases,
    )
