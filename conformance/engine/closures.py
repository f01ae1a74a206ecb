"""Manifest expressions as Python closures over Jinja2's parsed tree: the sandbox's checks, not its template machinery.

Jinja2 runs an expression as a template: every evaluation builds a context and a generator around the code it
generated (about 70 us an expression here). The same tree walked as nested closures costs a few microseconds. Each
closure does what Jinja2's generated code does at that node, in the same order, and calls the same hooks of the same
sandbox -- ``getattr``, ``getitem``, ``call``, ``call_binop``, ``call_unop``, ``undefined`` -- so every budget
(integer bits, string length), every refusal and every message stays the sandbox's own; Python's comparison, ``not``,
``and``, ``or`` and conditional operators are the ones Jinja2's code uses too.

Only a tree of the node kinds below is taken; for any other (a filter or test, a slice, keyword or star arguments,
an ``if`` without ``else``, the names ``self`` and ``result``, which Jinja2 binds itself, a tree nested deeper than
:data:`MAX_DEPTH`) :func:`closure` returns None and the caller runs Jinja2 as before, so its compile-time errors and
behaviour stay exactly as they were. ``tests/engine/test_closures.py`` holds the two paths equal.

Every expression is pure, so a subtree has one value per scope: evaluated in a :class:`Scope`, each subtree's value
is kept in the scope's ``memo`` under the subtree's structural id, and every expression evaluated there (a variant's
predicates, its constants, its passes' fields, the conditions of ``cases.conditions``) computes a rule they all
inline once. Only values are kept, never errors: a subtree that raised raises again where it is reached next, as
it did before, and a subtree not reached (short-circuit) is not computed.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable, Mapping

from jinja2 import nodes

#: Deeper trees go to Jinja2 (whose generated Python nests about two parentheses a level; Python's parser stops at
#: 200), so a tree the closures take is one Jinja2 compiles too.
MAX_DEPTH = 40

#: Names Jinja2's generated code does not look up in the context: ``self`` is the template, ``result`` the
#: variable the expression is assigned to.
_JINJA_NAMES = frozenset({"self", "result"})

_BINOPS = {
    nodes.Add: "+",
    nodes.Sub: "-",
    nodes.Mul: "*",
    nodes.Div: "/",
    nodes.FloorDiv: "//",
    nodes.Mod: "%",
    nodes.Pow: "**",
}
_UNOPS = {nodes.Neg: "-", nodes.Pos: "+"}
_COMPARE = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "gteq": operator.ge,
    "lt": operator.lt,
    "lteq": operator.le,
    "in": lambda a, b: a in b,
    "notin": lambda a, b: a not in b,
}

Fn = Callable[[Mapping[str, Any], list], Any]


class _NotTaken(Exception):
    """The tree has something the closures leave to Jinja2."""


class Scope(dict):
    """The names the expressions of one call see, with ``memo``: subtree id -> the value it took in this scope.
    Read-only, so a kept value cannot go stale."""

    __slots__ = ("memo",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.memo: dict[int, Any] = {}

    def _read_only(self, *args, **kwargs):
        raise TypeError("a Scope is read-only")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only


def closure(tree: nodes.Expr, env, fixed: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], Any] | None:
    """``scope -> value`` for ``tree`` in the sandbox ``env`` (whose ``call`` and operator hooks ignore Jinja2's
    context argument), ``fixed`` names bound whatever the scope; None when the tree is left to Jinja2.

    Subtree values are kept in the memo of a :class:`Scope`, or of the one evaluation for any other mapping (a
    subtree occurring twice, as rules inlined into several places do, is computed where first reached)."""
    try:
        root = _Builder(tree, env, fixed).build()
    except _NotTaken:
        return None
    return lambda scope: root(scope, scope.memo if type(scope) is Scope else {})


_UNSET = object()

#: (sandbox, fixed names, node type, fields with children by id) -> the subtree's id, for every tree compiled in
#: this process: equal ids mean equal subtrees evaluated alike, so one memo serves every closure.
_IDS: dict[tuple, int] = {}
_NEXT_ID = itertools.count()
#: The sandboxes and fixed values whose id() is part of a key, kept alive so that no id is reused.
_CONTEXTS: dict[tuple, tuple] = {}


def _context(env, fixed: Mapping[str, Any]) -> tuple:
    key = (id(env), tuple(sorted((name, id(value)) for name, value in fixed.items())))
    _CONTEXTS.setdefault(key, (env, tuple(fixed.values())))
    return key


class _Builder:
    def __init__(self, tree: nodes.Expr, env, fixed: Mapping[str, Any]):
        self.tree, self.env, self.fixed = tree, env, dict(fixed)
        self.context = _context(env, self.fixed)
        self.ids: dict[int, int] = {}  # id(node) -> subtree id
        self.lists: set[int] = set()  # id(node) of nodes whose subtree builds a list (kept out of memos)

    def build(self) -> Fn:
        try:
            self._intern(self.tree)
        except RecursionError:
            raise _NotTaken from None
        return self.node(self.tree, 0)

    def _intern(self, node: nodes.Node) -> int:
        """The subtree id of ``node`` (equal for equal subtrees), recorded with every descendant's."""
        fields, has_list = [], isinstance(node, nodes.List)
        for name in node.fields:
            value = getattr(node, name)
            if isinstance(value, nodes.Node):
                value = self._intern(value)
                has_list |= id(getattr(node, name)) in self.lists
            elif isinstance(value, list):
                value = tuple(self._intern(v) if isinstance(v, nodes.Node) else (type(v), repr(v)) for v in value)
                has_list |= any(id(v) in self.lists for v in getattr(node, name))
            else:
                value = (type(value), repr(value))
            fields.append(value)
        key = (self.context, type(node), tuple(fields))
        ident = _IDS.get(key)
        if ident is None:
            ident = _IDS.setdefault(key, next(_NEXT_ID))
        self.ids[id(node)] = ident
        if has_list:
            self.lists.add(id(node))
        return ident

    def node(self, node: nodes.Node, depth: int) -> Fn:
        if depth > MAX_DEPTH:
            raise _NotTaken
        fn = self._plain(node, depth)
        if isinstance(node, (nodes.Const, nodes.Name)) or id(node) in self.lists:  # a list: a fresh one each time
            return fn
        key = self.ids[id(node)]

        def kept(scope, m):
            value = m.get(key, _UNSET)
            if value is _UNSET:
                value = m[key] = fn(scope, m)
            return value

        return kept

    def _plain(self, node: nodes.Node, depth: int) -> Fn:
        env = self.env

        def sub(child):
            return self.node(child, depth + 1)

        kind = type(node)
        if kind is nodes.Const:
            value = node.value
            return lambda scope, m: value
        if kind is nodes.Name:
            return _name(node, env, self.fixed)
        if kind is nodes.Getattr:
            obj, attr, getattr_ = sub(node.node), node.attr, env.getattr
            return lambda scope, m: getattr_(obj(scope, m), attr)
        if kind is nodes.Getitem:
            if isinstance(node.arg, nodes.Slice):  # Jinja2 slices in plain Python, outside the sandbox's getitem
                raise _NotTaken
            obj, arg, getitem = sub(node.node), sub(node.arg), env.getitem
            return lambda scope, m: getitem(obj(scope, m), arg(scope, m))
        if kind is nodes.Call:
            if node.kwargs or node.dyn_args is not None or node.dyn_kwargs is not None:
                raise _NotTaken
            fn, args, call = sub(node.node), tuple(sub(a) for a in node.args), env.call
            return lambda scope, m: call(None, fn(scope, m), *[a(scope, m) for a in args])
        if kind in _BINOPS:
            op = _BINOPS[kind]
            if op not in env.intercepted_binops:
                raise _NotTaken
            left, right, binop = sub(node.left), sub(node.right), env.call_binop
            return lambda scope, m: binop(None, op, left(scope, m), right(scope, m))
        if kind in _UNOPS:
            op = _UNOPS[kind]
            if op not in env.intercepted_unops:
                raise _NotTaken
            arg, unop = sub(node.node), env.call_unop
            return lambda scope, m: unop(None, op, arg(scope, m))
        if kind is nodes.Not:
            arg = sub(node.node)
            return lambda scope, m: not arg(scope, m)
        if kind is nodes.And:
            left, right = sub(node.left), sub(node.right)
            return lambda scope, m: left(scope, m) and right(scope, m)
        if kind is nodes.Or:
            left, right = sub(node.left), sub(node.right)
            return lambda scope, m: left(scope, m) or right(scope, m)
        if kind is nodes.Compare:
            return _compare(sub(node.expr), tuple((_COMPARE[o.op], sub(o.expr)) for o in node.ops))
        if kind is nodes.CondExpr:
            if node.expr2 is None:  # Jinja2 gives a plain Undefined with its own hint: left to it
                raise _NotTaken
            test, yes, no = sub(node.test), sub(node.expr1), sub(node.expr2)
            return lambda scope, m: yes(scope, m) if test(scope, m) else no(scope, m)
        if kind is nodes.Tuple and node.ctx == "load":
            items = tuple(sub(i) for i in node.items)
            return lambda scope, m: tuple([i(scope, m) for i in items])
        if kind is nodes.List:
            items = tuple(sub(i) for i in node.items)
            return lambda scope, m: [i(scope, m) for i in items]
        raise _NotTaken


def _name(node: nodes.Name, env, fixed: dict) -> Fn:
    name = node.name
    if node.ctx != "load" or name in _JINJA_NAMES:
        raise _NotTaken
    if name in fixed:
        value = fixed[name]
        return lambda scope, m: value
    missing, undefined = object(), env.undefined

    def load(scope, m):
        value = scope.get(name, missing)
        return undefined(name=name) if value is missing else value

    return load


def _compare(first: Fn, ops: tuple) -> Fn:
    """A chain ``a < b <= c`` as Python runs it: each operand once, stopping at the first false comparison."""
    if len(ops) == 1:
        ((op, right),) = ops
        return lambda scope, m: op(first(scope, m), right(scope, m))

    def chain(scope, m):
        left = first(scope, m)
        for i, (op, expr) in enumerate(ops):
            right = expr(scope, m)
            result = op(left, right)
            if i + 1 == len(ops) or not result:
                return result
            left = right

    return chain
