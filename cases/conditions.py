"""Condition analysis: each variant's ``when`` list as a decision over atomic conditions.

Rules (``derive`` entries, constants) are inlined through the engine's RuleTable,
and the tree is split at ``and``/``or``/``not``; every other node is an atom.  An
atom is identified by its inlined source text, so the same condition shared by
several variants (or twice in one variant) is one atom.  Atoms are evaluated one
by one; one that raises (an absent input guarded elsewhere) is *unknown*, and
decisions are computed with Kleene logic, which matches Jinja's short-circuit
evaluation whenever the result is known.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from jinja2 import nodes

from conformance.engine.expressions import Evaluator, RuleTable, attribute_paths, names_used, unparse
from conformance.engine.manifest import Manifest
from conformance.errors import ExpressionError


@dataclass
class Atom:
    index: int
    key: str  # inlined source text
    tree: nodes.Expr
    origins: list[str] = field(default_factory=list)  # "variant: rule > rule" paths it was reached by

    @property
    def constant(self) -> bool:
        return not names_used(self.tree)

    @functools.cached_property
    def roots(self) -> frozenset[str]:
        return frozenset(p[0] for p in attribute_paths(self.tree))


@dataclass
class Decision:
    variant: str
    priority: int
    tree: tuple
    atoms: tuple[int, ...]  # atom indices it reads, in first-use order
    run: Callable[[list], Any]  # Kleene value of the decision for a list of atom values


def _kleene(tree) -> Callable[[list], Any]:
    kind = tree[0]
    if kind == "atom":
        i = tree[1]
        return lambda v: v[i]
    if kind == "not":
        f = _kleene(tree[1])
        return lambda v: None if (x := f(v)) is None else not x
    f, g = _kleene(tree[1]), _kleene(tree[2])
    stop = kind == "or"  # the value that decides the operator on its own

    def run(v):
        a = f(v)
        if a is stop:
            return stop
        b = g(v)
        if b is stop:
            return stop
        return None if a is None or b is None else not stop

    return run


def dotted(node) -> tuple[str, ...] | None:
    """``a.b.c`` as ("a", "b", "c"); None for anything else."""
    if isinstance(node, nodes.Name):
        return (node.name,)
    if isinstance(node, nodes.Getattr):
        base = dotted(node.node)
        return None if base is None else base + (node.attr,)
    return None


def around(value) -> tuple:
    """A boundary value and its neighbours: k - 1, k, k + 1 for an integer; the adjacent doubles for a float
    (non-finite ones left out). The values either side of a comparison with ``value``."""
    if isinstance(value, bool):
        return (False, True)
    if isinstance(value, int):
        return (value - 1, value, value + 1)
    if isinstance(value, float) and math.isfinite(value):
        return tuple(
            v for v in (math.nextafter(value, -math.inf), value, math.nextafter(value, math.inf)) if math.isfinite(v)
        )
    return ()


def _atoms_of(tree) -> list[int]:
    if tree[0] == "atom":
        return [tree[1]]
    return [i for sub in tree[1:] for i in _atoms_of(sub)]


class Analysis:
    """Atoms and decisions of one manifest; ``values(scope)`` evaluates every atom for a call."""

    def __init__(self, manifest: Manifest):
        self.manifest = manifest
        self.atoms: list[Atom] = []
        self._by_key: dict[str, Atom] = {}
        self._evaluator = Evaluator(RuleTable({}, file=manifest.file))
        self.decisions = [self._decision(v) for v in manifest.variants]  # priority order
        self._compiled = [self._evaluator.compiled(a.tree) for a in self.atoms]
        self._groups = self._batches()

    def _batches(self) -> list[tuple[frozenset, list[int], Any]]:
        """Atoms grouped by the optional inputs whose shape they read, each group compiled as one tuple
        (one sandbox call instead of one per atom; a group that raises is evaluated atom by atom)."""
        optional = {s.role for s in self.manifest.inputs if s.optional}
        groups: dict[frozenset, list[int]] = {}
        for a in self.atoms:
            reads = frozenset(
                p[1] for p in attribute_paths(a.tree) if len(p) > 1 and p[0] in ("shapes", "ranks") and p[1] in optional
            )
            groups.setdefault(reads, []).append(a.index)
        return [
            (roles, idx, self._evaluator.compiled(nodes.Tuple([self.atoms[i].tree for i in idx], "load")))
            for roles, idx in sorted(groups.items(), key=lambda kv: sorted(kv[0]))
        ]

    def _decision(self, variant) -> Decision:
        table = variant.evaluator.table
        parts = [self._walk(e.tree, table, (f"when[{j}]",), variant.id) for j, e in enumerate(variant.when)]
        tree = parts[0] if parts else ("atom", self._atom(nodes.Const(True), variant.id, ("when",)).index)
        for part in parts[1:]:
            tree = ("and", tree, part)
        return Decision(variant.id, variant.priority, tree, tuple(dict.fromkeys(_atoms_of(tree))), _kleene(tree))

    def _walk(self, node, table: RuleTable, path, variant_id):
        if isinstance(node, nodes.Name) and node.name in table.rules:
            return self._walk(table.rules[node.name].tree, table, path + (node.name,), variant_id)
        if isinstance(node, (nodes.And, nodes.Or)):
            kind = "and" if isinstance(node, nodes.And) else "or"
            return (
                kind,
                self._walk(node.left, table, path, variant_id),
                self._walk(node.right, table, path, variant_id),
            )
        if isinstance(node, nodes.Not):
            return ("not", self._walk(node.node, table, path, variant_id))
        return ("atom", self._atom(table.inline(node), variant_id, path).index)

    def _atom(self, tree, variant_id, path) -> Atom:
        key = unparse(tree)
        atom = self._by_key.get(key)
        if atom is None:
            atom = self._by_key[key] = Atom(len(self.atoms), key, tree)
            self.atoms.append(atom)
        origin = f"{variant_id}: {' > '.join(path)}"
        if origin not in atom.origins:
            atom.origins.append(origin)
        return atom

    # -- evaluation ---------------------------------------------------------------------------
    def values(self, scope, only: list[int] | None = None) -> tuple:
        """Each atom's value (None: unknown); with ``only``, those atoms' values in that order."""
        if only is not None:
            return tuple(self._one(i, scope) for i in only)
        out: list = [None] * len(self.atoms)
        present = scope["present"]
        for roles, idx, compiled in self._groups:
            try:
                if not all(present[r] for r in roles):
                    raise ExpressionError("an input the group reads is absent")
                for i, v in zip(idx, compiled(scope)):
                    out[i] = bool(v)
            except ExpressionError:
                for i in idx:
                    out[i] = self._one(i, scope)
        return tuple(out)

    def _one(self, i: int, scope):
        try:
            return bool(self._compiled[i](scope))
        except ExpressionError:
            return None

    def selected(self, scope) -> str | None | bool:
        """The variant the decisions select, False when none can be, None when it depends on an unknown."""
        vec = self.values(scope)
        for d in self.decisions:
            out = d.run(vec)
            if out is not False:
                return d.variant if out else None
        return False

    def evaluate(self, tree: nodes.Expr, scope) -> Any:
        """Any inlined tree (a comparison's operand) for a call; None when it cannot be evaluated."""
        try:
            return self._evaluator.compiled(tree)(scope)
        except ExpressionError:
            return None

    # -- structure the pool and the families use ----------------------------------------------
    def int_constants(self) -> set[int]:
        return {
            n.value
            for a in self.atoms
            for n in a.tree.find_all(nodes.Const)
            if isinstance(n.value, int) and not isinstance(n.value, bool)
        }

    def moduli(self) -> list[tuple[nodes.Expr, int]]:
        """(operand, k) of every ``operand % k`` with a constant k, once per operand text."""
        return list(self._moduli)

    @functools.cached_property
    def _moduli(self) -> tuple[tuple[nodes.Expr, int], ...]:
        found: dict[str, tuple[nodes.Expr, int]] = {}
        for a in self.atoms:
            for mod in a.tree.find_all(nodes.Mod):
                if isinstance(mod.right, nodes.Const) and isinstance(mod.right.value, int) and mod.right.value > 1:
                    found.setdefault(f"{unparse(mod.left)} % {mod.right.value}", (mod.left, mod.right.value))
        return tuple(found.values())

    def comparisons(self) -> list[tuple[int, nodes.Expr, nodes.Expr]]:
        """(atom index, one side, the other side) of every atom that is a single comparison, both ways round."""
        out = []
        for a in self.atoms:
            t = a.tree
            if isinstance(t, nodes.Compare) and len(t.ops) == 1:
                left, right = t.expr, t.ops[0].expr
                out += [(a.index, left, right), (a.index, right, left)]
        return out

    def constant_comparisons(self) -> dict[int, tuple[nodes.Expr, int]]:
        """atom index -> (operand, k) for comparisons of one operand with an integer constant k."""
        out = {}
        for index, operand, const in self.comparisons():
            if (
                isinstance(const, nodes.Const)
                and isinstance(const.value, int)
                and not isinstance(const.value, bool)
                and not isinstance(operand, nodes.Const)
            ):
                out[index] = (operand, const.value)
        return out

    def compared_with(self, *path: str) -> list[tuple[int, nodes.Expr]]:
        """(atom index, the other side) of every comparison one of whose sides is exactly the dotted name
        ``path`` (``("attributes", "axis")``, ``("device", "limits", "maxComputeWorkgroupStorageSize")``): a
        constant (``attributes.epsilon >= 1.17e-38``) or an expression of the call (``ranks.X - 1``)."""
        return [(index, other) for index, side, other in self.comparisons() if dotted(side) == path]

    def boundary_atoms(self) -> list[Atom]:
        """Comparisons of a shape-dependent side with a device- or tunable-dependent one (size limits)."""
        return [
            a
            for a in self.atoms
            if isinstance(a.tree, nodes.Compare) and "shapes" in a.roots and a.roots & {"device", "tunables"}
        ]

    def limit_sides(self, scope) -> tuple:
        """The values of the boundary atoms' operands that read no shape: equal for two profiles means
        their size thresholds are equal too."""
        out = []
        for atom in self.boundary_atoms():
            for operand in [atom.tree.expr] + [op.expr for op in atom.tree.ops]:
                if "shapes" not in {p[0] for p in attribute_paths(operand)}:
                    out.append(self.evaluate(operand, scope))
        return tuple(out)
