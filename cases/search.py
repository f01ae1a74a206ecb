"""MC/DC search: for each variant, each atomic condition, each truth value, a call where the variant's
decision hinges on that condition.

A vector of atom values witnesses (variant v, atom a, value b) when a is b, no
higher-priority variant is selected (so v's decision is what selection sees), v's
decision is known, and flipping a alone (every occurrence of it in v) changes v's
decision or makes it unknown (the flip reaches a condition the call cannot
evaluate, such as the rank of an absent input).  The same search over the pool
explains the gaps: a condition that is constant, never takes the value, is always
shadowed by a higher-priority variant, or is always masked by another condition.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from cases.calls import CallSpec
from cases.conditions import Analysis
from conformance.engine.expressions import attribute_paths, unparse


@dataclass
class Entry:
    spec: CallSpec
    values: tuple


@dataclass
class Result:
    witnesses: dict[tuple[str, int, bool], CallSpec] = field(default_factory=dict)
    reached: dict[str, CallSpec] = field(default_factory=dict)
    seen: set[tuple[int, bool]] = field(default_factory=set)
    shadowed_by: dict[tuple[str, int, bool], str] = field(default_factory=dict)
    open_vectors: dict[tuple[str, int, bool], list] = field(default_factory=dict)  # unshadowed, not deciding
    hinges: dict[tuple, list[tuple[str, int]]] = field(default_factory=dict)  # vector -> (variant, atom)
    calls: int = 0


def _keep(table: dict, key, spec: CallSpec):
    old = table.get(key)
    if old is None or spec.cost() < old.cost():
        table[key] = spec


def search(analysis: Analysis, entries: list[Entry]) -> Result:
    best: dict[tuple, CallSpec] = {}
    for e in entries:
        _keep(best, e.values, e.spec)
    res = Result(calls=len(entries))
    decisions = analysis.decisions
    for vec, spec in best.items():
        res.seen.update((i, v) for i, v in enumerate(vec) if v is not None)
        outs = [d.run(vec) for d in decisions]
        shadow = None
        for d, out in zip(decisions, outs):
            for a in d.atoms:
                b = vec[a]
                if b is None:
                    continue
                key = (d.variant, a, b)
                if shadow is not None:
                    res.shadowed_by.setdefault(key, shadow)
                    continue
                if out is None:
                    continue
                flipped = list(vec)
                flipped[a] = not b
                if d.run(flipped) is not out:
                    _keep(res.witnesses, key, spec)
                    res.hinges.setdefault(vec, []).append((d.variant, a))
                else:
                    res.open_vectors.setdefault(key, []).append(vec)
            if shadow is None and out is True:
                _keep(res.reached, d.variant, spec)
            if shadow is None and out is not False:
                shadow = d.variant
    return res


def gap_reason(analysis: Analysis, pool: Result, variant: str, atom: int, value: bool) -> str:
    """Why no call makes ``variant`` hinge on ``atom`` being ``value``, judged on the pool."""
    a = analysis.atoms[atom]
    key = (variant, atom, value)
    word = "true" if value else "false"
    if key in pool.witnesses:
        return f"not covered by the cases, although the pool has a witness ({pool.witnesses[key]})"
    if a.constant:
        return f"constant: the condition is never {word}"
    if (atom, value) not in pool.seen:
        hint = _output_hint(analysis, a)
        return f"never {word} on any of {pool.calls} candidate calls{hint}"
    if key in pool.open_vectors:
        partner = _masking_partner(analysis, variant, atom, pool.open_vectors[key])
        return (
            f"masked by {partner}: whenever it is {word} and {variant} is not shadowed, flipping it alone "
            f"does not change the decision"
        )
    return f"shadowed: whenever it is {word}, higher-priority variant {pool.shadowed_by.get(key)} is selected first"


def _output_hint(analysis: Analysis, atom) -> str:
    paths = attribute_paths(atom.tree)
    outs = [o for o in analysis.manifest.outputs if any(p[:2] == ("shapes", o.role) for p in paths)]
    return "".join(f" (output {o.role} has shape {unparse(o.shape.tree)})" for o in outs)


def _masking_partner(analysis: Analysis, variant: str, atom: int, vectors: list[tuple]) -> str:
    """The condition (or pair of conditions) that most often masks ``atom``: flipping it too changes the
    decision."""
    d = next(d for d in analysis.decisions if d.variant == variant)
    for size in (1, 2):
        counts: dict[tuple, int] = {}
        for vec in vectors[:20]:
            out = d.run(vec)
            others = [c for c in d.atoms if c != atom and vec[c] is not None]
            for group in itertools.combinations(others, size):
                flipped = list(vec)
                for c in (atom, *group):
                    flipped[c] = not vec[c]
                if d.run(flipped) is not out:
                    key = tuple((c, vec[c]) for c in group)
                    counts[key] = counts.get(key, 0) + 1
        if counts:
            group, _ = max(counts.items(), key=lambda kv: kv[1])
            return " with ".join(f"`{analysis.atoms[c].key}` ({'true' if v else 'false'})" for c, v in group)
    return "several other conditions"


def boundaries(analysis: Analysis, res: Result, entries: list[Entry], scope_of) -> list[CallSpec]:
    """For every comparison with a constant k (``ranks.X >= 1``, ``numel % 4 == 0``) and every variant that
    hinges on it, the cheapest call whose compared operand is k-1, k and k+1."""
    compares = analysis.constant_comparisons()
    if not compares:
        return []
    best: dict[tuple, CallSpec] = {}
    for e in entries:
        pairs = [(v, a) for v, a in res.hinges.get(e.values, ()) if a in compares]
        if not pairs:
            continue
        scope = scope_of(e.spec)
        for variant, a in pairs:
            operand, k = compares[a]
            value = analysis.evaluate(operand, scope)
            if isinstance(value, int) and abs(value - k) <= 1:
                _keep(best, (variant, a, value), e.spec)
    return list(best.values())
