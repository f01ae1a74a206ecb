"""The candidate pool the condition search draws witnesses from: many cheap calls, built from the manifest.

Dimensions are small values plus k-1, k, k+1 for every integer constant in the
conditions; sizes next to device and tunable limits are found by bisection on the
conditions that compare a shape with a limit, so no limit formula is written here.
"""

from __future__ import annotations

import itertools

from cases.calls import CallSpec, scope_of
from cases.conditions import Analysis
from cases.profiles import PROFILES
from cases.shapes import companions, primary
from conformance.engine.planner import Planner

MAX_POOL_NUMEL = 2**27
SMALL_DIMS = range(0, 9)


def dims(analysis: Analysis) -> list[int]:
    found = set(SMALL_DIMS)
    for k in analysis.int_constants():
        found.update(d for d in (k - 1, k, k + 1) if 0 <= d <= 4097)
    return sorted(found)


def primary_shapes(analysis: Analysis) -> list[tuple[int, ...]]:
    d = dims(analysis)
    out = [()] + [(n,) for n in d]
    out += [(a, n) for a in (2, 3) for n in d] + [(4, n) for n in (1, 2, 3)]
    last = sorted({0, 3, 4} | {k + j for k in analysis.int_constants() if k > 4 for j in (-1, 0, 1)})
    out += [(2,) * (r - 1) + (n,) for r in range(3, 7) for n in last]
    return list(dict.fromkeys(out))


SMALL_SHAPES = [(0,), (3,), (4,)]


def tunable_configs(manifest) -> list[tuple[tuple[str, int], ...]]:
    out = []
    for key, default in manifest.tunables.items():
        for value in (0, 1, 2 * default):
            if value != default:
                out.append(((key, value),))
    return out


def calls_for(manifest, shape, dtype, profile="baseline", tunables=(), full=True) -> list[CallSpec]:
    """The primary at ``shape`` with every companion at its matching guess (and absent, when optional, in every
    combination); with ``full``, also each companion's other shapes one input at a time, the others matching or
    the optional ones absent, and all companions at their k-th other shape together.

    One input at a time keeps the pool linear in the inputs' companion shapes (a product grew as 8^k: about
    7000 calls per shape for LayerNorm's two companions, hundreds of thousands for a five-input op): a condition
    on one companion's shape is shown by varying that companion alone."""
    lead = primary(manifest)
    base, others = [], []
    for spec in manifest.inputs:
        if spec is lead:
            base.append([(shape, dtype)])
            others.append([])
            continue
        opts = [(s, dtype) for _, s in companions(spec, shape)]
        base.append(opts[:1] + ([None] if spec.optional else []))
        others.append(opts[1:] if full else [])
    combos = list(itertools.product(*base))
    matching = tuple(options[0] for options in base)
    bare = tuple(options[-1] for options in base)  # every optional companion absent
    for i, options in enumerate(others):
        for around in dict.fromkeys((matching, bare)):
            combos += [around[:i] + (arg,) + around[i + 1 :] for arg in options]
    for k in range(max(map(len, others), default=0)):  # and every companion off together, k-th other shape each
        combos.append(
            tuple(options[min(k, len(options) - 1)] if options else matching[i] for i, options in enumerate(others))
        )
    out = []
    for combo in combos:
        args = {spec.role: arg for spec, arg in zip(manifest.inputs, combo)}
        out.append(CallSpec.of(manifest, args, profile, dict(tunables)))
    return out


def _first_change(value_at, hi_limit: int) -> int | None:
    """Smallest n in (1, hi_limit] whose value differs from value_at(1), assuming one change."""
    base = value_at(1)
    lo, hi = 1, 2
    while value_at(hi) == base:
        lo, hi = hi, hi * 2
        if hi > hi_limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if value_at(mid) == base:
            lo = mid
        else:
            hi = mid
    return hi


def thresholds(manifest, planner: Planner, analysis: Analysis, profile: str, tunables, dtype) -> set[int]:
    """Sizes n where a boundary atom changes value for a rank-1 primary [n] with matching companions."""
    atoms = [a.index for a in analysis.boundary_atoms()]
    cache: dict[int, tuple | None] = {}

    def values(n):
        if n not in cache:
            scope = scope_of(planner, _rank1(manifest, n, dtype, profile, tunables))
            cache[n] = None if scope is None else analysis.values(scope, atoms)
        return cache[n]

    found: set[int] = set()
    for j in range(len(atoms)):
        n = _first_change(lambda k: None if values(k) is None else values(k)[j], MAX_POOL_NUMEL)  # noqa: B023 (called within this iteration, never after it)
        if n is not None:
            found.update(k for k in (n - 1, n, n + 1) if 0 < k <= MAX_POOL_NUMEL + 1)
            found.update(-(-(n + 1) // k) * k for _, k in analysis.moduli())  # the next aligned size past it
    return found


def _rank1(manifest, n, dtype, profile="baseline", tunables=()) -> CallSpec:
    """The primary as [n], every other input at its first (matching) companion shape."""
    lead = primary(manifest)
    args = {s.role: ((n,), dtype) if s is lead else (companions(s, (n,))[0][1], dtype) for s in manifest.inputs}
    return CallSpec.of(manifest, args, profile, dict(tunables))


def build_pool(manifest, planner: Planner, analysis: Analysis) -> list[CallSpec]:
    lead = primary(manifest)
    dtypes = manifest.type_constraints[lead.typevar]
    pool: list[CallSpec] = []
    for shape in primary_shapes(analysis):
        for dtype in dtypes:
            pool += calls_for(manifest, shape, dtype)
    configs = [("baseline", ())] + [(name, ()) for name in PROFILES if name != "baseline"]
    configs += [("baseline", t) for t in tunable_configs(manifest)]
    searched = set()
    for profile, tunables in configs:
        for dtype in dtypes:
            extra = [] if (profile, tunables) == ("baseline", ()) else SMALL_SHAPES
            scope = scope_of(planner, _rank1(manifest, 1, dtype, profile, tunables))
            signature = (dtype, analysis.limit_sides(scope) if scope else None)
            sizes = set()
            if analysis.boundary_atoms() and signature not in searched:
                searched.add(signature)
                sizes = thresholds(manifest, planner, analysis, profile, tunables, dtype)
            for shape in extra + [(n,) for n in sorted(sizes)]:
                pool += calls_for(manifest, shape, dtype, profile, tunables, full=not extra)
    return list(dict.fromkeys(pool))
