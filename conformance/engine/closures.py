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
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Mapping

from jinja2 import nodes

#: Deeper trees go to Jinja2 (whose generated Python nests about two parentheses a level; Python's parser stops at
#: 200), so a tree the closures take is one Jinja2 compiles too.
MAX_DEPTH = 40

#: Names Jinja2's generated code does not look up in the context: ``self`` is the template, ``result`` the
#: variable the expression is assigned to.
_JINJA_NAMES = frozenset({"self", "result"})

_BINOPS = {nodes.Add: "+", nodes.Sub: "-", nodes.Mul: "*", nodes.Div: "/", nodes.FloorDiv: "//", nodes.Mod: "%",
           nodes.Pow: "**"}
_UNOPS = {nodes.Neg: "-", nodes.Pos: "+"}
_COMPARE = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "gteq": operator.ge, "lt": operator.lt,
            "lteq": operator.le, "in": lambda a, b: a in b, "notin": lambda a, b: a not in b}

Fn = Callable[[Mapping[str, Any]], Any]


class _NotTaken(Exception):
    """The tree has something the closures leave to Jinja2."""


def closure(tree: nodes.Expr, env, fixed: Mapping[str, Any]) -> Fn | None:
    """``scope -> value`` for ``tree`` in the sandbox ``env`` (whose ``call`` and operator hooks ignore Jinja2's
    context argument), ``fixed`` names bound whatever the scope; None when the tree is left to Jinja2."""
    try:
        return _build(tree, env, dict(fixed), 0)
    except _NotTaken:
        return None


def _build(node: nodes.Node, env, fixed: dict, depth: int) -> Fn:
    if depth > MAX_DEPTH:
        raise _NotTaken
    def sub(child):
        return _build(child, env, fixed, depth + 1)

    kind = type(node)
    if kind is nodes.Const:
        value = node.value
        return lambda scope: value
    if kind is nodes.Name:
        return _name(node, env, fixed)
    if kind is nodes.Getattr:
        obj, attr, getattr_ = sub(node.node), node.attr, env.getattr
        return lambda scope: getattr_(obj(scope), attr)
    if kind is nodes.Getitem:
        if isinstance(node.arg, nodes.Slice):   # Jinja2 slices in plain Python, outside the sandbox's getitem
            raise _NotTaken
        obj, arg, getitem = sub(node.node), sub(node.arg), env.getitem
        return lambda scope: getitem(obj(scope), arg(scope))
    if kind is nodes.Call:
        if node.kwargs or node.dyn_args is not None or node.dyn_kwargs is not None:
            raise _NotTaken
        fn, args, call = sub(node.node), tuple(sub(a) for a in node.args), env.call
        return lambda scope: call(None, fn(scope), *[a(scope) for a in args])
    if kind in _BINOPS:
        op = _BINOPS[kind]
        if op not in env.intercepted_binops:
            raise _NotTaken
        left, right, binop = sub(node.left), sub(node.right), env.call_binop
        return lambda scope: binop(None, op, left(scope), right(scope))
    if kind in _UNOPS:
        op = _UNOPS[kind]
        if op not in env.intercepted_unops:
            raise _NotTaken
        arg, unop = sub(node.node), env.call_unop
        return lambda scope: unop(None, op, arg(scope))
    if kind is nodes.Not:
        arg = sub(node.node)
        return lambda scope: not arg(scope)
    if kind is nodes.And:
        left, right = sub(node.left), sub(node.right)
        return lambda scope: left(scope) and right(scope)
    if kind is nodes.Or:
        left, right = sub(node.left), sub(node.right)
        return lambda scope: left(scope) or right(scope)
    if kind is nodes.Compare:
        return _compare(sub(node.expr), tuple((_COMPARE[o.op], sub(o.expr)) for o in node.ops))
    if kind is nodes.CondExpr:
        if node.expr2 is None:   # Jinja2 gives a plain Undefined with its own hint: left to it
            raise _NotTaken
        test, yes, no = sub(node.test), sub(node.expr1), sub(node.expr2)
        return lambda scope: yes(scope) if test(scope) else no(scope)
    if kind is nodes.Tuple and node.ctx == "load":
        items = tuple(sub(i) for i in node.items)
        return lambda scope: tuple([i(scope) for i in items])
    if kind is nodes.List:
        items = tuple(sub(i) for i in node.items)
        return lambda scope: [i(scope) for i in items]
    raise _NotTaken


def _name(node: nodes.Name, env, fixed: dict) -> Fn:
    name = node.name
    if node.ctx != "load" or name in _JINJA_NAMES:
        raise _NotTaken
    if name in fixed:
        value = fixed[name]
        return lambda scope: value
    missing, undefined = object(), env.undefined

    def load(scope):
        value = scope.get(name, missing)
        return undefined(name=name) if value is missing else value
    return load


def _compare(first: Fn, ops: tuple) -> Fn:
    """A chain ``a < b <= c`` as Python runs it: each operand once, stopping at the first false comparison."""
    if len(ops) == 1:
        (op, right), = ops
        return lambda scope: op(first(scope), right(scope))

    def chain(scope):
        left = first(scope)
        for i, (op, expr) in enumerate(ops):
            right = expr(scope)
            result = op(left, right)
            if i + 1 == len(ops) or not result:
                return result
            left = right
    return chain
