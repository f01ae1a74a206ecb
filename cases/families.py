"""The mission's case families, each derived from the manifest (inputs, ranks, type constraints, limits).

Every family is a function ``(ctx) -> list[Item]``; the shapes it uses are generic
(small shapes, a 0 in each position, sizes found by bisection on the engine's
own verdict), and whatever input is optional or rank-constrained is found in the
manifest, so a new package gets every family that applies to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cases.calls import CallSpec, scope_of
from cases.conditions import Analysis, around, dotted
from cases.data import MAX_CASE_ELEMENTS, NONFINITE, size_rows, special_values
from cases.extremes import coverage, extreme_positions, layout_of, row_count, split_rows
from cases.pool import _first_change
from cases.profiles import limit_profile_name, profile_named
from cases.shapes import companions, primary
from conformance.engine.expressions import attribute_paths
from conformance.engine.planner import Planner
from conformance.engine.profile import ALIGNMENT_LIMITS, BASELINE
from conformance.errors import ContractError, ExpressionError
from conformance.ops.registry import find

UNSUPPORTED_DTYPES = ("float64", "int32")
UNALIGNED_SIZES = (1, 2, 3, 5, 6, 7, 4097)
HEAVY_SEARCH_LIMIT = 2**28


@dataclass(frozen=True)
class Item:
    family: str
    spec: CallSpec
    suffix: str = ""  # id suffix for a value-focused variant of a call
    dist: str = "normal"
    scale: float = 3.0
    special: tuple[str, ...] = ()
    special_rows: int = 0
    extremes: tuple[tuple[int, int], ...] = ()


#: Columns of the multi-row shapes of row ops: a vec4 row and a scalar one.
ROW_COLS = (4, 3)


class Ctx:
    """A manifest with the helpers families share: the primary input, fitting companion shapes."""

    def __init__(self, manifest, planner: Planner, analysis: Analysis):
        self.m, self.planner, self.analysis = manifest, planner, analysis
        self.lead = primary(manifest)
        self.dtypes = manifest.type_constraints[self.lead.typevar]
        self.others = [s for s in manifest.inputs if s is not self.lead]
        self.has_optional = any(s.optional for s in manifest.inputs)
        # Filled one role at a time: a role's probe call needs companions for the other roles too, and sees
        # the fits found before it ("match" for the rest). A dict comprehension read self.fit before it existed.
        self.fit: dict[str, str] = {}
        for s in self.others:
            self.fit[s.role] = self._fitting_label(s)
        self.record = find(manifest.op_id)  # None: the generic families only (values need a record to check)
        self.rows = bool(self.record and self.record.rows)

    def _fitting_label(self, spec) -> str:
        """Which companion guess ("match": trailing dims, "lead": leading dims) the contract accepts."""
        probe = tuple(range(3, 3 + 2 * max(2, (spec.rank or 0) + 1), 2))
        for label in ("match", "lead"):
            if self.accepted(self.call(probe, self.dtypes[0], label=label, only=spec.role)):
                return label
        return "match"

    def companion(self, spec, shape, label: str | None = None) -> tuple[int, ...]:
        options = dict(companions(spec, shape))
        return options.get(label or self.fit.get(spec.role, "match"), options["match"])

    def dtype_of(self, spec, dtype: str) -> str:
        allowed = self.m.type_constraints[spec.typevar]
        return dtype if spec.typevar == self.lead.typevar or dtype not in allowed else allowed[0]

    def call(
        self,
        shape,
        dtype,
        *,
        optional=True,
        profile="baseline",
        tunables=None,
        label=None,
        only=None,
        override=None,
        attributes=None,
    ) -> CallSpec:
        args = {self.lead.role: (tuple(shape), dtype)}
        for s in self.others:
            if s.optional and not optional:
                continue
            args[s.role] = (
                self.companion(s, shape, label if only in (None, s.role) else None),
                self.dtype_of(s, dtype),
            )
        args.update(override or {})
        return CallSpec.of(self.m, args, profile, tunables, attributes)

    def states(self) -> tuple[bool, ...]:
        return (False, True) if self.has_optional else (False,)

    def accepted(self, spec: CallSpec) -> bool:
        """The planner's verdict, except that a call whose planning fails (taken, as ``calls.accepted`` counts it)
        is refused where the conditions show that no variant can be selected. A call the planner plans never is:
        wherever the predicates evaluate, the conditions' Kleene values are theirs, so its variant is selectable."""
        try:
            self._planned(spec)
        except ContractError:
            return False
        except ExpressionError:
            scope = scope_of(self.planner, spec)
            return scope is None or self.analysis.selected(scope) is not False
        return True

    def plan(self, spec: CallSpec):
        try:
            return self._planned(spec)
        except (ContractError, ExpressionError):
            return None

    def _planned(self, spec: CallSpec):
        return self.planner.plan_case(spec.call_args(), profile_named(spec.profile), spec.tunables)

    def modulus(self) -> int:
        return max([k for _, k in self.analysis.moduli()] or [1])

    def crossings(self, pred, limit: int, residues=(0, 1)) -> list[tuple[int, int]]:
        """(n, n+1) where pred([n]) turns from its value at small n, per residue class of the modulus."""
        step = self.modulus()
        out = []
        for r in dict.fromkeys(r % step for r in residues):
            m = _first_change(lambda k: pred(step * k + r), limit // step)  # noqa: B023 (called within this iteration, never after it)
            if m is None:
                continue
            lo = step * (m - 1) + r
            base = pred(lo)
            n = next(n for n in range(lo + 1, step * m + r + 1) if pred(n) != base)
            out.append((n - 1, n))
        return list(dict.fromkeys(out))


# -- families -------------------------------------------------------------------------------------


def empty(ctx: Ctx):
    """A 0 in each position of shapes of rank 1 to 4."""
    base = (2, 3, 4, 5)
    shapes = [base[:r][:i] + (0,) + base[:r][i + 1 :] for r in range(1, 5) for i in range(r)]
    return [Item("empty", ctx.call(s, d, optional=o)) for s in shapes for d in ctx.dtypes for o in ctx.states()]


def unaligned(ctx: Ctx):
    """Sizes that are not a multiple of 4, rank 1 and rank 2 (last dim not a multiple either)."""
    shapes = [(n,) for n in UNALIGNED_SIZES] + [(3, 5), (5, 3)]
    return [Item("unaligned", ctx.call(s, d, optional=o)) for s in shapes for d in ctx.dtypes for o in ctx.states()]


def optional_mismatch(ctx: Ctx):
    """Every rank-declared non-primary input: rank one lower and higher, one short and one long, with an
    empty primary too; the fitting shape as control."""
    out = []
    for spec in [s for s in ctx.others if s.rank is not None]:
        for shape in ((4, 3), (2, 8), (0, 3), (3, 0)):
            for d in ctx.dtypes:
                for label, _ in companions(spec, shape):
                    out.append(Item("optional-mismatch", ctx.call(shape, d, label=label, only=spec.role)))
    return out


def f16_availability(ctx: Ctx):
    """float16 calls on profiles with and without shader-f16 (and float32 on the latter as control)."""
    out = []
    for d in ctx.dtypes:
        profiles = ("baseline", "no-f16") if d == "float16" else ("no-f16",)
        for profile in profiles:
            for shape in ((8,), (4, 3), (0,)):
                out += [Item("f16-availability", ctx.call(shape, d, optional=o, profile=profile)) for o in ctx.states()]
    return out if "float16" in ctx.dtypes else []


def _shapes_of(ctx: Ctx):
    """Shape makers n -> shape the size searches use: [n], and [n, c] (n rows of c) for row ops."""
    return [lambda n: (n,)] + ([lambda n, c=c: (n, c) for c in ROW_COLS] if ctx.rows else [])


def buffer_limit(ctx: Ctx):
    """At the storage-binding limit and one element past: small-limit profile per dtype, baseline heavy; for row
    ops also in rows (n rows of a vec4 and of a scalar row)."""
    out = []
    for d in ctx.dtypes:
        for profile, limit, states, residues in (
            ("small-storage", 2**20, ctx.states(), (0, 1)),
            ("baseline", HEAVY_SEARCH_LIMIT, (False,), (0,)),
        ):
            for i, shape in enumerate(_shapes_of(ctx)):
                for o in states:

                    def ok(n):
                        return ctx.accepted(ctx.call(shape(n), d, optional=o, profile=profile))  # noqa: B023 (called within this iteration, never after it)

                    found = (
                        ctx.crossings(ok, limit, residues if not o else (0,)) if i == 0 else _crossings(ok, limit // 4)
                    )
                    for pair in found:
                        out += [Item("buffer-limit", ctx.call(shape(n), d, optional=o, profile=profile)) for n in pair]
    return out


def _crossings(pred, limit: int) -> list[tuple[int, int]]:
    m = _first_change(pred, limit)
    return [] if m is None else [(m - 1, m)]


def dispatch_limit(ctx: Ctx):
    """On a profile with 4 workgroups per dimension: where the dispatch first splits over 2 dimensions,
    the last accepted size and one past; for row ops in rows too (a row-indexed kernel splits over rows)."""
    out = []
    d = ctx.dtypes[0]
    for i, shape in enumerate(_shapes_of(ctx)):

        def split(n, shape=shape):
            spec = ctx.call(shape(n), d, optional=False, profile="small-dispatch")
            plan = ctx.plan(spec) if ctx.accepted(spec) else None
            return plan is not None and any(p.dispatch.counts[1] > 1 for p in plan.passes)

        def ok(n, shape=shape):
            return ctx.accepted(ctx.call(shape(n), d, optional=False, profile="small-dispatch"))

        for pred in (split, ok):
            for pair in ctx.crossings(pred, 2**22) if i == 0 else _crossings(pred, 2**20):
                sizes = pair if i == 0 else pair + (pair[1] + 1,)  # rows: one more past the split, a partial row
                out += [
                    Item(
                        "dispatch-limit",
                        ctx.call(shape(n), d, optional=o, profile="small-dispatch"),
                    )
                    for n in sizes
                    for o in ctx.states()
                ]
                if i == 0 and pred is ok and pair[0] % ctx.modulus() == 0:
                    out += _suffix_at_limit(ctx, pair[0], d, "small-dispatch")
    return out


#: The profile the overshoot search plans on: 4 workgroups per dimension, so that a dispatch of a few workgroups
#: already splits over a second dimension. The kernel's code past the split (the early return, the tail guards) is
#: the same at any limit; only the plan's dispatch differs, and the checker plans it for the case's profile. At the
#: baseline's 65,535 the same split needed 65,536 workgroups: seconds a case on a software device.
OVERSHOOT_PROFILE = "small-dispatch"
#: The WORKGROUP_SIZE values the overshoot search tries besides the default: row ops' short rows at 32, their long
#: rows and elementwise ops at 1 (a workgroup size the default run does not otherwise dispatch past a split).
OVERSHOOT_WORKGROUP = 32
#: The suffix a rank-free companion (a broadcast input) has in the overshoot search's [n, 3] calls.
BROADCAST_COLS = 3
#: Overshoot calls stay below this many bytes of tensors (on OVERSHOOT_PROFILE they need a few KB).
OVERSHOOT_MAX_BYTES = 1 << 20


def _overshoot(plan) -> bool:
    """Whether a pass's dispatch splits over a second dimension with workgroups past the last one it needs."""
    return any(
        p.dispatch.counts[1] > 1
        and p.dispatch.counts[0] * p.dispatch.counts[1] * p.dispatch.counts[2] * p.dispatch.workgroup_size
        > -(-p.dispatch.threads // p.dispatch.workgroup_size) * p.dispatch.workgroup_size
        for p in plan.passes
    )


def dispatch_overshoot(ctx: Ctx):
    """On OVERSHOOT_PROFILE, per variant and dtype (a device without shader-f16 still sees every variant overshoot),
    with the default workgroup size and with a small one, the smallest call whose dispatch splits over two
    dimensions with workgroups past the end: row ops' short rows (and long rows, for the variants that take them),
    elementwise ops with companions of any rank broadcast as a suffix [3] too. The workgroups past the end must
    return and every tail guard hold past the split; the guard after each output sees a workgroup that writes."""
    found: dict[tuple[str, str, bool], CallSpec] = {}
    sized = "WORKGROUP_SIZE" in ctx.m.tunables
    small = (None, {"WORKGROUP_SIZE": OVERSHOOT_WORKGROUP}) if sized else (None,)  # None: the default size
    tiny = (None, {"WORKGROUP_SIZE": 1}) if sized else (None,)
    searches = []
    for d in ctx.dtypes:
        if ctx.rows:  # short rows by default and at 32 lanes; long rows by default and with one invocation per row
            searches += [(shape, d, t) for shape in _shapes_of(ctx) for t in small]
            searches += [(shape, d, t) for t in tiny for shape in _long_rows(ctx, d, t)]
        else:
            free = [s for s in ctx.others if s.rank is None]
            shapes = _shapes_of(ctx) + ([lambda n: (n, BROADCAST_COLS)] if free else [])
            searches += [(shape, d, t) for t in tiny for shape in shapes]
    for shape, d, tunables in searches:
        for o in ctx.states():

            def spec_at(n, shape=shape, o=o, d=d, t=tunables):
                lead = shape(n)
                suffix = {
                    s.role: (lead[1:], ctx.dtype_of(s, d))
                    for s in ctx.others
                    if s.rank is None and len(lead) > 1 and not ctx.rows
                }
                return ctx.call(lead, d, optional=o, profile=OVERSHOOT_PROFILE, tunables=t, override=suffix)

            _overshoot_calls(ctx, spec_at, (d, tunables is None), found)
    return [Item("dispatch-overshoot", spec) for spec in found.values()]


def _long_rows(ctx: Ctx, d: str, tunables) -> list:
    """Row ops: shape makers n -> [n, c] for the shortest rows c (a multiple of the modulus, and one more) that two
    rows of select another variant than short rows of that residue do (the variants for long rows)."""
    if not ctx.rows:
        return []

    def variant(c):
        spec = ctx.call((2, c), d, tunables=tunables)
        return ctx.plan(spec).variant if ctx.accepted(spec) and ctx.plan(spec) else None

    step = ctx.modulus()
    firsts = [_first_change(lambda k, r=r: variant(step * k + r), (1 << 16) // step) for r in (0, 1)]
    return [lambda n, c=step * m + r: (n, c) for r, m in zip((0, 1), firsts) if m]


def _overshoot_calls(ctx: Ctx, spec_at, kind: tuple, found: dict) -> None:
    """Into ``found`` ((variant, *kind) -> the lightest call; kind: the dtype and whether the workgroup size is the
    default): past the first size where
    ``spec_at(n)``'s dispatch splits over a second dimension (per residue of the modulus), the first size whose
    dispatch has workgroups past the end, when light."""

    def split(n):
        spec = spec_at(n)
        plan = ctx.plan(spec) if ctx.accepted(spec) else None
        return plan is not None and any(p.dispatch.counts[1] > 1 for p in plan.passes)

    step = ctx.modulus()
    light, limit = 1, (1 << 24) // step  # the searches stop where a call would not be light (or at the limit)
    while 2 * light < limit and spec_at(step * light * 2).nbytes <= OVERSHOOT_MAX_BYTES:
        light *= 2
    for r in range(step):
        m = 1 if split(step + r) else _first_change(lambda k: split(step * k + r), 2 * light)  # noqa: B023 (called within this iteration, never after it)
        for n in range(step * m + r, step * (m + 64) + r, step) if m else ():  # a spare workgroup: a few sizes on
            spec = spec_at(n)
            plan = ctx.plan(spec) if spec.nbytes <= OVERSHOOT_MAX_BYTES else None
            if plan is None:  # past the light sizes, or past the sizes the profile's dispatch limit accepts
                break
            if _overshoot(plan):
                key = (plan.variant, *kind)
                if key not in found or spec.nbytes < found[key].nbytes:
                    found[key] = spec
                break


def _suffix_at_limit(ctx: Ctx, limit: int, d: str, profile: str) -> list[Item]:
    """The last accepted size ``limit`` again as [limit / c, c] with every rank-free companion the suffix [c]: c the
    smallest divisor of ``limit`` above 1 that is not a multiple of the modulus, so that a variant for unaligned
    companions (one the aligned call at the limit never selects) meets the limit exactly too; and one row more.
    Only where that call at the limit is accepted (the limit is then the one of the variant it selects)."""
    c = next((c for c in range(2, 65) if limit % c == 0 and c % ctx.modulus()), None)
    free = [s for s in ctx.others if s.rank is None]
    if c is None or not free:
        return []
    calls = [
        ctx.call((rows, c), d, profile=profile, override={s.role: ((c,), ctx.dtype_of(s, d)) for s in free})
        for rows in (limit // c, limit // c + 1)
    ]
    return [Item("dispatch-limit", spec) for spec in calls] if ctx.accepted(calls[0]) else []


def ranks(ctx: Ctx):
    """Rank 0 and ranks 1 to 6, with a last dim of 3 and of 4."""
    shapes = [()] + [(2,) * (r - 1) + (n,) for r in range(1, 7) for n in (3, 4)]
    return [Item("ranks", ctx.call(s, d, optional=o)) for s in shapes for d in ctx.dtypes for o in ctx.states()]


def dtypes(ctx: Ctx):
    """Each dtype of every type constraint, on every input of that type variable."""
    out = []
    for tv, allowed in ctx.m.type_constraints.items():
        for d in allowed:
            for shape in ((8,), (4, 3)):
                for o in ctx.states():
                    base = ctx.call(shape, d if tv == ctx.lead.typevar else ctx.dtypes[0], optional=o).args()
                    args = {r: a if a is None or ctx.m.input(r).typevar != tv else (a[0], d) for r, a in base.items()}
                    out.append(Item("dtypes", CallSpec.of(ctx.m, args)))
    return out


def dtype_unsupported(ctx: Ctx):
    """float64 and int32 on each input in turn."""
    out = []
    base = ctx.call((4, 3), ctx.dtypes[0]).args()
    for spec in ctx.m.inputs:
        for d in UNSUPPORTED_DTYPES:
            out.append(Item("dtype-unsupported", CallSpec.of(ctx.m, {**base, spec.role: (base[spec.role][0], d)})))
    return out


def mixed_dtype(ctx: Ctx):
    """Inputs of one type variable with different dtypes."""
    out = []
    for tv, allowed in ctx.m.type_constraints.items():
        roles = [s for s in ctx.m.inputs if s.typevar == tv]
        if len(roles) < 2:
            continue
        for first in allowed:
            for other in allowed:
                if first != other:
                    base = ctx.call((4, 3), first).args()
                    args = {
                        r: (a[0], other if r != roles[0].role and ctx.m.input(r).typevar == tv else a[1])
                        for r, a in base.items()
                    }
                    out.append(Item("mixed-dtype", CallSpec.of(ctx.m, args)))
    return out


def missing_input(ctx: Ctx):
    """Each required input absent, the others present; and every input absent."""
    out = [Item("missing-input", CallSpec.of(ctx.m, {}))]
    for spec in ctx.m.inputs:
        if not spec.optional:
            out.append(
                Item("missing-input", CallSpec.of(ctx.m, {**ctx.call((4, 3), ctx.dtypes[0]).args(), spec.role: None}))
            )
    return out


#: Non-power-of-two values each tunable is tried at (workgroup sizes a kernel's reduction loop must not assume away;
#: 40, not a multiple of 16, leaves a reduction tree's last group of lanes partial).
ODD_TUNABLES = (40, 48, 96, 192)


def tunables(ctx: Ctx):
    """Each tunable at 0, 1, 64 and twice its default; at non-power-of-two values where the manifest accepts them
    (multi-row and long rows for row ops); the default on a profile with a small workgroup cap."""
    out = []
    for key, default in ctx.m.tunables.items():
        for value in (0, 1, 64, 2 * default):
            out += [
                Item("tunables", ctx.call((8,), ctx.dtypes[0], optional=o, tunables={key: value})) for o in ctx.states()
            ]
        shapes = ((5, 300), (3, 1030), (4, 7)) if ctx.rows else ((1030,), (3, 7))
        for value in ODD_TUNABLES:
            for shape in shapes:
                for o in ctx.states():
                    spec = ctx.call(shape, ctx.dtypes[0], optional=o, tunables={key: value})
                    if ctx.accepted(spec):
                        out.append(Item("tunables", spec))
    out += [
        Item("tunables", ctx.call(s, ctx.dtypes[0], optional=o, profile="small-workgroup"))
        for s in ((8,), (4, 3), (300, 4))
        for o in ctx.states()
    ]
    return out


def values_special(ctx: Ctx):
    """Signed zeros, subnormals, smallest normal, overflow magnitudes, largest finite value."""
    return [
        Item("values-special", ctx.call(s, d, optional=o), "special", "normal", 1.0, special_values(d))
        for d in ctx.dtypes
        for s in ((2, 32), (3, 13))
        for o in ctx.states()
    ]


#: values-nonfinite's shapes: elementwise ops, and row ops (whose rows all but the last get the values).
NONFINITE_SHAPES = ((4, 8), (7,))
NONFINITE_ROW_SHAPES = ((4, 8), (2, 7))


def values_nonfinite(ctx: Ctx):
    """NaN and infinities next to finite values (the reference leaves them unconstrained). Row ops: in every row
    but the last, whose outputs (its reference finite) are compared; a non-finite value in every row, as an
    elementwise op gets them, would leave no element to compare."""
    shapes = NONFINITE_ROW_SHAPES if ctx.rows else NONFINITE_SHAPES
    return [
        Item(
            "values-nonfinite",
            ctx.call(s, d, optional=o),
            "nonfinite",
            "normal",
            2.0,
            NONFINITE,
            special_rows=size_rows(s) - 1 if ctx.rows else 0,
        )
        for d in ctx.dtypes
        for s in shapes
        for o in ctx.states()
    ]


def values_op(ctx: Ctx):
    """The op record's own input data (LayerNorm rows with |mean| / sigma up to 1e4, Softmax rows far from 0),
    on multi-row shapes (for row ops also rows at each length where the selected variant changes, such as the
    first looped row, as many as fit MAX_CASE_ELEMENTS), every dtype, optional inputs absent and present."""
    if ctx.record is None:
        return []
    shapes = ((8, 64), (5, 33)) + tuple(
        (max(1, min(3, MAX_CASE_ELEMENTS // n)), n) for _, n in (_steps(ctx, "variant") if ctx.rows else ())
    )
    return [
        Item("values-op", ctx.call(s, d, optional=o), f"{r.name}{scale:g}", r.name, scale)
        for r in ctx.record.data
        for scale in r.scales
        for d in ctx.dtypes
        for s in shapes
        for o in ctx.states()
    ]


def values_partial_nonfinite(ctx: Ctx):
    """Row ops: NaN and infinities in the first row only, so the other rows (and their outputs) stay checked."""
    if not ctx.rows:
        return []
    return [
        Item(
            "values-partial-nonfinite",
            ctx.call(s, d, optional=o),
            "nonfinite-row0",
            "normal",
            2.0,
            NONFINITE,
            special_rows=1,
        )
        for d in ctx.dtypes
        for s in ((4, 8), (3, 13))
        for o in ctx.states()
    ]


def values_extremes(ctx: Ctx):
    """Row ops: each row's maximum and a large negative (+-EXTREME among N(0, 1) values) in a different lane,
    invocation and loop iteration of the planned reduction (cases.extremes). Per variant one layout: of the row
    lengths where the selected variant or the workgroup size changes (size-steps' lengths), the one whose rows
    reach the most invocations, then lanes x iterations; per dtype and optional-input state. A reduction that
    drops lanes, invocations, iterations or the final combine misses some row's extreme."""
    if not ctx.rows:
        return []
    out = []
    lengths = dict.fromkeys(n for what in ("variant", "workgroup") for step in _steps(ctx, what) for n in step)
    for d in ctx.dtypes:
        for o in ctx.states():
            best: dict[str, tuple] = {}
            for n in lengths:
                plan = ctx.plan(ctx.call((1, n), d, optional=o))
                layout = layout_of(plan, ctx.lead.role, n) if plan is not None else None
                if layout is not None and (plan.variant not in best or coverage(layout) > coverage(best[plan.variant])):
                    best[plan.variant] = layout
            for layout in best.values():
                positions = extreme_positions(layout, row_count(layout))
                for group in split_rows(layout, len(positions), MAX_CASE_ELEMENTS):
                    spec = ctx.call((len(group), layout.cols), d, optional=o)
                    out.append(
                        Item(
                            "values-extremes",
                            spec,
                            f"extremes{group.start}",
                            "normal",
                            1.0,
                            extremes=tuple(positions[g] for g in group),
                        )
                    )
    return out


def broadcast(ctx: Ctx):
    """Every form of a rank-free companion input next to the primary: its shape, each suffix, each suffix with
    leading ones, leading dims, a middle 1, single elements of each rank; accepted or rejected as the manifest
    says."""
    out = []
    for spec in [s for s in ctx.others if s.rank is None]:
        for shape in ((2, 3, 4), (3, 8)):
            forms = [shape[k:] for k in range(len(shape) + 1)]
            forms += [(1,) * k + shape[len(shape) - j :] for j in range(1, len(shape)) for k in (1, len(shape) - j)]
            forms += [shape[:k] for k in range(1, len(shape))] + [shape[:1] + (1,) + shape[2:]]
            forms += [(1,) * r for r in range(1, len(shape) + 2)]
            for form in dict.fromkeys(forms):
                for d in ctx.dtypes:
                    out.append(Item("broadcast", ctx.call(shape, d, override={spec.role: (form, d)})))
        out += _suffix_positions(ctx, spec)
    return out


def _suffix_positions(ctx: Ctx, spec) -> list[Item]:
    """The companion's rank compared with constants (``ranks.B < 8``, one clause per trailing position): the
    primary at the largest such rank, neighbouring dims different (3, 2, 3, ..., 4), with every suffix of it
    (accepted as the manifest says) and every suffix with one dim off by one, at each position (each clause
    shown false as well as true)."""
    ranks = [
        k
        for _, (operand, k) in ctx.analysis.constant_comparisons().items()
        if ("ranks", spec.role) in attribute_paths(operand)
    ]
    top = max(ranks, default=0)
    if top <= 3:  # the fixed shapes above already reach these positions
        return []
    shape = tuple(3 - (top - 2 - i) % 2 for i in range(top - 1)) + (4,)
    d = ctx.dtypes[0]
    forms = []
    for k in range(top + 1):
        suffix = shape[k:]
        forms.append(suffix)
        forms += [suffix[:j] + (suffix[j] + 1,) + suffix[j + 1 :] for j in range(len(suffix))]
    return [Item("broadcast", ctx.call(shape, d, override={spec.role: (form, d)})) for form in dict.fromkeys(forms)]


def values_random(ctx: Ctx):
    """Larger random tensors: normal around 0 (scale 1), uniform over a wide range (scale 8)."""
    return [
        Item("values-random", ctx.call(s, d, optional=o), f"{dist}{scale:g}", dist, scale)
        for d in ctx.dtypes
        for s in ((64, 36), (33, 17))
        for o in ctx.states()
        for dist, scale in (("normal", 1.0), ("uniform", 8.0))
    ]


#: Primary shapes an attribute is varied on when a condition compares it with an expression of the call
#: (``attributes.axis == ranks.X - 1``): ranks 1 to 3, whose boundaries differ; a vec4 last axis.
ATTRIBUTE_SHAPES = ((8,), (3, 8), (2, 3, 8))
#: The primary shape for attributes compared with constants only (``attributes.epsilon >= 1.17e-38``).
ATTRIBUTE_SHAPE = (3, 8)
#: A float attribute is also tried at 1.0: on the scale of the data (normal, scale 3), so a kernel that ignores
#: the value passed (and uses the default, or none) is seen in its outputs, not only in its acceptance.
ATTRIBUTE_UNIT = 1.0


def attributes(ctx: Ctx):
    """Each declared attribute at the boundaries of the conditions that compare it, derived from the manifest:
    for ``attributes.<name> <op> other``, the value of ``other`` for the call and the values either side of it
    (integers k - 1, k, k + 1; floats the adjacent doubles), both sides of an equality with an expression of
    the call on primaries of ranks 1 to 3 (``axis == ranks.X - 1``: -2, -1, 0, ..., rank); a float attribute at
    1.0 too, and a bool one both ways. Accepted calls carry data (the value checker sees the attribute's
    effect); rejected ones are checked against the predicate that fails."""
    out = []
    for name, spec in ctx.m.attributes.items():
        compared = ctx.analysis.compared_with("attributes", name)
        reads_call = any(attribute_paths(other) for _, other in compared)
        shapes = ATTRIBUTE_SHAPES if reads_call else (ATTRIBUTE_SHAPE,)
        dtypes = ctx.dtypes[:1] if reads_call else ctx.dtypes
        for shape in shapes:
            for d in dtypes:
                base = ctx.call(shape, d)
                scope = scope_of(ctx.planner, base)
                values: list = []
                for _, other in compared:
                    boundary = ctx.analysis.evaluate(other, scope) if scope is not None else None
                    values += list(around(_typed(spec.type, boundary)))  # 4 for a float attribute: 4.0 +- ulp
                if spec.type == "float":
                    values.append(ATTRIBUTE_UNIT)
                elif spec.type == "bool":
                    values += [False, True]
                for value in dict.fromkeys(v for v in values if v is not None):
                    out.append(Item("attributes", ctx.call(shape, d, attributes={name: value})))
    return out


def _typed(kind: str, value):
    """``value`` as an attribute of type ``kind`` would hold it, or None when it cannot (4.5 for an int)."""
    if kind == "int":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if kind == "float":
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return value if isinstance(value, bool) else None


def device_limits(ctx: Ctx):
    """Each device limit a condition compares, as a bare limit, with an expression that reads no shape or
    attribute (``4 * min(tunables.WORKGROUP_SIZE, ...) <= device.limits.maxComputeWorkgroupStorageSize``): the
    baseline profile with that limit set to the expression's value and one either side, so the comparison is
    shown at equality (a `<=` that became `<`) and past it."""
    out = []
    d = ctx.dtypes[0]
    seen = set()
    for _, side, other in ctx.analysis.comparisons():
        path = dotted(side)
        limit = path[2] if path and len(path) == 3 and path[:2] == ("device", "limits") else None
        if limit is None or any(p[0] in ("shapes", "ranks", "attributes", "present") for p in attribute_paths(other)):
            continue
        scope = scope_of(ctx.planner, ctx.call((4, 8), d))
        value = ctx.analysis.evaluate(other, scope) if scope is not None else None
        for v in around(value) if isinstance(value, int) else ():
            if v >= 0 and (limit, v) not in seen:
                seen.add((limit, v))
                out += [
                    Item("device-limits", ctx.call(s, d, optional=o, profile=limit_profile_name(limit, v)))
                    for s in ((4, 8),)
                    for o in ctx.states()
                ]
    return out


def size_steps(ctx: Ctx):
    """Where the selected variant or the planned workgroup size first changes as the primary's last axis grows,
    per residue class of the modulus (aligned and not): the size before the step and at it, as [n] or, for row
    ops, in three rows [3, n]; both states of the optional inputs. (A workgroup size of 32 * ceilDiv(n / 4, 32) first steps at
    n = 132; a cached vec4 row ends at n = 4 * 4 * workgroup size.)"""
    out = []
    d = ctx.dtypes[0]
    makers = [lambda n: (3, n)] if ctx.rows else [lambda n: (n,)]
    for what in ("variant", "workgroup"):
        for step in _steps(ctx, what):
            for n in step:
                out += [Item("size-steps", ctx.call(make(n), d, optional=o)) for make in makers for o in ctx.states()]
    return out


def _steps(ctx: Ctx, what: str) -> list[tuple[int, int]]:
    """(last length before, first length at) the first change of the selected variant (``what`` "variant") or of
    the planned workgroup sizes ("workgroup") along the primary's last axis, per residue class of the modulus."""
    step = ctx.modulus()
    d = ctx.dtypes[0]

    def planned(n):
        plan = ctx.plan(ctx.call((n,), d, optional=False))
        if plan is None:
            return None
        return plan.variant if what == "variant" else tuple(p.dispatch.workgroup_size for p in plan.passes)

    out = []
    for r in dict.fromkeys(r % step for r in (0, 1)):
        m = _first_change(lambda k: planned(step * k + r), 2**16 // step)  # noqa: B023 (called within this iteration, never after it)
        if m is not None:
            out.append((step * (m - 1) + r, step * m + r))
    return out


#: Alignment limits (a smaller value is the stronger device) a manifest reads are also tried at these values
#: (lavapipe and many desktop drivers report 32 where WebGPU's default is 256; one value keeps the count modest).
ALIGNMENT_VALUES = (32,)
#: A threshold above this many elements is left to the limit families (buffer-limit, dispatch-limit).
THRESHOLD_MAX = 4096
#: Primary shapes at a count n: [n], and [n / c, c] for the first c of these dividing n (a last axis that is
#: not a multiple of 4, so a suffix companion of it is neither the primary's count nor vec4-sized).
THRESHOLD_COLS = (3, 2, 5)


def read_limits(ctx: Ctx) -> set[str]:
    """Every device limit the manifest reads, in any rule (derive, constants) or predicate."""
    trees = [a.tree for a in ctx.analysis.atoms]
    trees += [rule.tree for v in ctx.m.variants for rule in v.evaluator.table.rules.values()]
    return {p[2] for t in trees for p in attribute_paths(t) if len(p) == 3 and p[:2] == ("device", "limits")}


def alignment_profiles(ctx: Ctx) -> list[str]:
    """The baseline, and the baseline with each alignment limit the manifest reads lowered to ALIGNMENT_VALUES."""
    return ["baseline"] + [
        limit_profile_name(limit, v)
        for limit in sorted(read_limits(ctx) & ALIGNMENT_LIMITS)
        for v in ALIGNMENT_VALUES
        if v < BASELINE.limits.get(limit, v + 1)
    ]


def _threshold_shapes(n: int) -> list[tuple[int, ...]]:
    out = [(n,)]
    c = next((c for c in THRESHOLD_COLS if n % c == 0 and n // c > 1), None)
    if c is not None:
        out.append((n // c, c))
    return out


def thresholds(ctx: Ctx):
    """Each comparison of a shape quantity with a side that reads no shape, rank, attribute or presence but does
    read the device or the dtypes (``numel(shapes.A) > max(8, device.limits.minStorageBufferOffsetAlignment //
    dtypeBytes(dtypes.T))``): that side evaluated for the call, on the baseline and on the baseline with each
    alignment limit the manifest reads lowered (so quantities derived from the alignment take other values, and
    bindings offset by them are checked against it), per dtype; primaries [n] and [n / c, c] whose shape side is
    the value or one either side (aligned and unaligned counts), each with its fitting companions and with each
    rank-free companion as every proper suffix of the primary. Accepted calls carry data; rejected ones are checked
    against the predicate that fails."""
    out: list[Item] = []
    sides = []
    for _, side, other in ctx.analysis.comparisons():
        roots = {p[0] for p in attribute_paths(side)}
        other_roots = {p[0] for p in attribute_paths(other)}
        if (
            "shapes" in roots
            and other_roots
            and not other_roots & {"shapes", "ranks", "attributes", "present"}
            and other_roots & {"device", "dtypes"}
        ):
            sides.append((side, other))
    if not sides:
        return out
    free = [s for s in ctx.others if s.rank is None]
    seen = set()
    for profile in alignment_profiles(ctx):
        for d in ctx.dtypes:
            probe = scope_of(ctx.planner, ctx.call((4, 8), d, profile=profile))
            if probe is None:
                continue
            for side, other in sides:
                k = ctx.analysis.evaluate(other, probe)
                if not isinstance(k, int) or isinstance(k, bool) or not 0 < k <= THRESHOLD_MAX:
                    continue
                for n in around(k):
                    for shape in _threshold_shapes(n) if n > 0 else ():
                        specs = [ctx.call(shape, d, optional=o, profile=profile) for o in ctx.states()]
                        specs += [
                            ctx.call(shape, d, profile=profile, override={s.role: (shape[j:], d)})
                            for s in free
                            for j in range(1, len(shape))
                        ]
                        for spec in specs:
                            scope = scope_of(ctx.planner, spec)
                            if spec in seen or scope is None or ctx.analysis.evaluate(side, scope) not in around(k):
                                continue
                            seen.add(spec)
                            out.append(Item("thresholds", spec))
    return out


FAMILIES = {
    "empty": empty,
    "unaligned": unaligned,
    "optional-mismatch": optional_mismatch,
    "f16-availability": f16_availability,
    "buffer-limit": buffer_limit,
    "dispatch-limit": dispatch_limit,
    "dispatch-overshoot": dispatch_overshoot,
    "ranks": ranks,
    "dtypes": dtypes,
    "dtype-unsupported": dtype_unsupported,
    "mixed-dtype": mixed_dtype,
    "missing-input": missing_input,
    "tunables": tunables,
    "values-special": values_special,
    "values-nonfinite": values_nonfinite,
    "values-random": values_random,
    "values-op": values_op,
    "values-partial-nonfinite": values_partial_nonfinite,
    "values-extremes": values_extremes,
    "broadcast": broadcast,
    "attributes": attributes,
    "device-limits": device_limits,
    "size-steps": size_steps,
    "thresholds": thresholds,
}
#: Families filled by the condition search (generate.py), after the ones above.
SEARCH_FAMILIES = ("conditions", "residues", "reach")
FAMILY_NAMES = tuple(FAMILIES) + SEARCH_FAMILIES
