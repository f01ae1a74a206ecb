"""The closures that run manifest expressions (conformance.engine.closures) against Jinja2's own template path:
the same value of the same type, or the same error with the same message, for every expression of the shipped
manifests on the scopes of their golden calls, for hostile and odd expressions, and the same plans."""

from __future__ import annotations

import functools

import pytest
from jinja2 import nodes

from cases.conditions import Analysis
from cases.golden import CASES_DIR, golden_path, load_golden
from conformance.engine import closures, expressions
from conformance.engine.call import make_call
from conformance.engine.expressions import Compiled, parse, unparse
from conformance.engine.package import find_package_dirs, load_package
from conformance.engine.planner import Planner
from conformance.errors import ConformanceError, ExpressionError
from tests.engine.conftest import SPECS
from tests.engine.test_sandbox import PAYLOADS

PACKAGES = [load_package(d) for d in find_package_dirs(SPECS)]
#: Every STRIDE-th golden call of each package (all of them: scripts/plan_digest.py, about a minute here).
STRIDE = 7


def _compiled(tree, fast: bool, monkeypatch) -> Compiled | ExpressionError:
    monkeypatch.setattr(expressions, "FAST_PATH", fast)
    try:
        return Compiled(tree, source=unparse(tree), pointer="/p", file="m.json")
    except ExpressionError as exc:
        return exc


def _outcome(compiled, scope):
    if isinstance(compiled, ExpressionError):
        return "compile", str(compiled)
    try:
        value = compiled(scope)
    except ExpressionError as exc:
        return "error", str(exc)
    return type(value).__name__, repr(value)


def _same(tree, scopes, monkeypatch) -> bool:
    """Both paths give the same outcome on every scope; True when the closures took the tree."""
    fast, slow = _compiled(tree, True, monkeypatch), _compiled(tree, False, monkeypatch)
    for scope in scopes:
        assert _outcome(fast, scope) == _outcome(slow, scope), unparse(tree)
    return getattr(fast, "fast", False)


@functools.cache
def _calls(name: str) -> list:
    return load_golden(golden_path(CASES_DIR, name))[::STRIDE]


@functools.cache
def _scopes(package, count: int = 12) -> list:
    planner, scopes = Planner(package.manifest), []
    for case in _calls(package.name)[:count]:
        try:
            scopes.append(planner.scope(make_call(package.manifest, case.call_args(), case.profile, case.tunables)))
        except ConformanceError:
            pass
    return scopes


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_every_manifest_expression_is_fast_and_the_same(package, monkeypatch):
    """Each distinct inlined expression of the manifest (every variant's predicates, constants, shapes, fields) and
    each of its operands (what a rejection's explanation evaluates)."""
    monkeypatch.setattr(expressions, "MAX_SOURCE", 10**6)  # inlined texts may be longer than a manifest's own
    scopes = _scopes(package)
    assert scopes
    manifest = load_package(package.root).manifest
    planner = Planner(manifest)
    for case in _calls(package.name):  # compiles what planning these calls reaches
        try:
            planner.plan(make_call(manifest, case.call_args(), case.profile, case.tunables))
        except ConformanceError:
            pass
    sources = set(manifest.compilations.by_source) | {a.key for a in Analysis(manifest).atoms}
    trees = [parse(source) for source in sorted(sources)]
    assert len(trees) > 10
    operands = [n for t in trees for n in t.find_all(nodes.Expr) if not isinstance(n, nodes.Const)]
    taken = [_same(t, scopes, monkeypatch) for t in trees + operands[:400]]
    assert all(taken), "a shipped expression falls back to Jinja2's template path (slow)"


ODD = [
    "shapes.X",
    "shapes.Z",
    "nope",
    "nope.x",
    "nope.x.y",
    "shapes.X.count",
    "shapes.X[0]",
    "shapes.X[-1]",
    "shapes.X[9]",
    "shapes.X[true]",
    'shapes["X"]',
    "shapes[0]",
    "ranks.X + 1",
    "ranks.X + nope",
    "nope + 1",
    "-nope",
    "not nope",
    "nope == 1",
    "1 in nope",
    "nope in [1]",
    "nope if true else 1",
    "1 if nope else 2",
    "shapes.X + shapes.X",
    "shapes.X + [1]",
    "shapes.X * 2",
    '"a" ~ ranks.X ~ shapes.X',
    '"a" ~ nope',
    "1 < 2 < 3",
    "3 > 2 > 5 > nope",
    "1 < 2 < nope",
    "1 == 1.0",
    "1 / 0",
    "1 // 0",
    "1 % 0",
    "2 ** -1",
    "2.0 ** 0.5",
    "(-8) ** (1 / 3)",
    "numel(shapes.X) / 4",
    "ceilDiv(numel(shapes.X), 0)",
    "min()",
    'max(1, "a")',
    "dim(shapes.X, 5)",
    'dtypeBytes("f64")',
    "f16Ok(1)",
    "numel(1)",
    "numel",
    "[1, 2] == [1, 2]",
    "(1, 2)[1]",
    "[1, 2][0]",
    "(1,)",
    "[]",
    "device.limits.maxBufferSize * 2",
    "device.features",
    '"shader-f16" in device.features',
    "present.X and ranks.X > 0 or false",
    "tunables.nope",
    "attributes",
    'dtypes.T == "f32"',
    "true and 0",
    '0 or ""',
    "none",
    "1 if false",
    "shapes.X[1:]",
    "shapes.X | length",
    "shapes.X is defined",
    "self",
    "result",
    "loop",
    "__concat(1)",
    "numel(shapes.X, key=1)",
    "numel(*shapes.X)",
    "2 ** 200",
    "10 ** 38 * 10 ** 38 * 10 ** 38 * 10 ** 38",
    "1e308 * 10",
    '"a" * 5000',
    "-(1)",
    '+"a"',
    "not (1, 2)",
] + PAYLOADS


@pytest.mark.parametrize("source", ODD, ids=range(len(ODD)))
def test_odd_and_hostile_expressions_behave_alike(source, monkeypatch):
    try:
        tree = parse(source)
    except ExpressionError:
        return  # refused by the parser, which both paths share
    scopes = [*_scopes(PACKAGES[0], 3), {}]
    _same(tree, scopes, monkeypatch)


def test_the_deepest_tree_taken_also_compiles_with_jinja(monkeypatch):
    """A tree the closures take never hides an error Jinja2 would raise at compile time: at MAX_DEPTH of the node
    kind whose generated code nests the most parentheses, Jinja2 still compiles it."""
    tree = parse("shapes")
    for _ in range(closures.MAX_DEPTH):
        tree = nodes.Getitem(
            nodes.Call(nodes.Name("numel", "load"), [tree], [], None, None), nodes.Name("ranks", "load"), "load"
        )
    assert closures.closure(tree, expressions.SANDBOX, {}) is None  # two levels a round: past the limit
    tree = parse("shapes")
    for _ in range(closures.MAX_DEPTH // 2):
        tree = nodes.Getitem(
            nodes.Call(nodes.Name("numel", "load"), [tree], [], None, None), nodes.Name("ranks", "load"), "load"
        )
    assert closures.closure(tree, expressions.SANDBOX, {}) is not None
    assert not isinstance(_compiled(tree, False, monkeypatch), ExpressionError)
    _same(tree, [{}], monkeypatch)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_plans_are_the_same_on_both_paths(package, monkeypatch):
    """Every STRIDE-th golden call planned with a manifest loaded on each path: the same plan or refusal."""
    outcomes = {}
    for fast in (True, False):
        monkeypatch.setattr(expressions, "FAST_PATH", fast)
        manifest = load_package(package.root).manifest
        planner, seen = Planner(manifest), []
        for case in _calls(package.name):
            try:
                seen.append(repr(planner.plan(make_call(manifest, case.call_args(), case.profile, case.tunables))))
            except ConformanceError as exc:
                seen.append(f"{type(exc).__name__}: {exc} {getattr(exc, 'failures', None)}")
        outcomes[fast] = seen
    assert outcomes[True] == outcomes[False]


def _counting_scope(kind):
    """A scope of ``kind`` (Scope or dict) whose ``numel`` counts its calls, and the list of those calls."""
    seen = []

    def numel(shape):
        seen.append(shape)
        return len(shape)

    return kind(
        {"shapes": expressions.Namespace("shapes", {"X": (2, 3)}), "numel": expressions.Builtin("numel", numel)}
    ), seen


def test_a_scope_computes_a_subtree_its_expressions_share_once():
    plus, times = (
        Compiled(parse(s), source=s, pointer="/p", file="m.json")
        for s in ("numel(shapes.X) + 1", "numel(shapes.X) * 2")
    )
    scope, seen = _counting_scope(closures.Scope)
    assert (plus(scope), times(scope), plus(scope)) == (3, 4, 3) and len(seen) == 1
    scope, seen = _counting_scope(dict)  # any other mapping: once per evaluation
    assert (plus(scope), times(scope)) == (3, 4) and len(seen) == 2


def test_a_scope_keeps_values_not_errors():
    source = "dim(shapes.X, numel(shapes.X))"
    failing = Compiled(parse(source), source=source, pointer="/p", file="m.json")
    scope, seen = _counting_scope(closures.Scope)
    scope = closures.Scope({**scope, "dim": expressions.builtins(())["dim"]})
    messages = []
    for _ in range(2):
        with pytest.raises(ExpressionError) as info:
            failing(scope)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "out of range" in messages[0]
    assert len(seen) == 1  # the argument's value is kept; the failing call is made again


def test_a_scope_is_read_only():
    scope, _ = _counting_scope(closures.Scope)
    for change in (
        lambda: scope.__setitem__("shapes", {}),
        lambda: scope.update(x=1),
        lambda: scope.pop("numel"),
        lambda: scope.setdefault("y", 1),
        scope.clear,
        lambda: scope.__delitem__("numel"),
    ):
        with pytest.raises(TypeError):
            change()
    assert set(scope) == {"shapes", "numel"}
