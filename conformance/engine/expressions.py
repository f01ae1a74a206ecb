"""Manifest expressions: Jinja2 expressions parsed, inlined and run in a locked-down sandbox.

Manifests are untrusted.  Expressions are parsed with Jinja2's own parser and
compiled by an :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` with
``StrictUndefined``, tightened further:

* no globals, filters or tests; attribute and item access only on the
  documented :class:`Namespace` objects and on shape tuples;
* only the documented :data:`builtin functions <BUILTIN_NAMES>` may be called,
  with positional arguments;
* arithmetic is intercepted: integers are capped at :data:`MAX_INT_BITS` bits and
  strings at :data:`MAX_STRING` characters, so ``9**9**9`` or ``"a" * 10**9``
  fail at once instead of exhausting the machine;
* expressions are capped in length, and named rules (``derive`` entries and
  constants) are *inlined* into the expressions that use them, with the inlined
  tree capped in size, so a chain of rules cannot grow exponentially.

Inlining keeps Jinja's short-circuit semantics across rule boundaries: in
``present.bias and ranks.bias == 1`` the right side is never evaluated when the
bias is absent, even when it sits in another rule.
"""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from jinja2 import StrictUndefined, nodes
from jinja2.environment import TemplateExpression
from jinja2.exceptions import SecurityError, TemplateError, UndefinedError
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment

from conformance.engine.closures import Scope, closure  # noqa: F401 (Scope is re-exported: planner.py imports it from here)
from conformance.engine.dtypes import WGSL_BYTES
from conformance.errors import ExpressionError

MAX_SOURCE = 2000
MAX_INLINED_NODES = 2000
#: Nodes compiled per manifest, all expressions and variants together (Jinja compiles ~10,000 nodes a second
#: here, so about 2 s); identical inlined expressions of different variants compile once.
MAX_COMPILED_NODES = 20000
MAX_INT_BITS = 128
MAX_STRING = 4096

BUILTIN_NAMES = ("numel", "dim", "dtypeBytes", "f16Ok", "ceilDiv", "min", "max")


class Namespace(Mapping):
    """A read-only mapping whose keys are reachable as attributes in expressions (``shapes.X``)."""

    def __init__(self, label: str, values: Mapping[str, Any]):
        self._label = label
        self._values = dict(values)

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        return f"<{self._label}>"


class Absent:
    """The shape/rank of an input that the call leaves out; any use of it is an error."""

    def __init__(self, role: str):
        self.role = role

    def __repr__(self):
        return f"<absent {self.role}>"

    def _fail(self, *_):
        raise ExpressionError(f"input {self.role!r} is absent (check present.{self.role} first)")

    __bool__ = __eq__ = __lt__ = __le__ = __gt__ = __ge__ = __iter__ = __len__ = _fail
    __hash__ = object.__hash__


class Builtin:
    """A function callable from expressions; nothing else is callable."""

    def __init__(self, name: str, fn: Callable[..., Any]):
        self.name = name
        self._fn = fn

    def __call__(self, *args):
        for a in args:
            if isinstance(a, Absent):
                a._fail()
        return self._fn(*args)

    def __repr__(self):
        return f"<builtin {self.name}>"


def _shape(value, fn: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(isinstance(d, int) for d in value):
        raise ExpressionError(f"{fn}() expects a shape, got {value!r}")
    return value


def _numel(shape):
    return math.prod(_shape(shape, "numel"))


def _dim(shape, axis):
    shape = _shape(shape, "dim")
    if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < len(shape):
        raise ExpressionError(f"dim() axis {axis!r} is out of range for a shape of rank {len(shape)}")
    return shape[axis]


def _dtype_bytes(dtype):
    if dtype not in WGSL_BYTES:
        raise ExpressionError(f"dtypeBytes() does not know dtype {dtype!r}")
    return WGSL_BYTES[dtype]


def _int(value, fn):
    if not isinstance(value, int) or isinstance(value, bool):
        raise ExpressionError(f"{fn}() expects integers, got {value!r}")
    return value


def _ceil_div(a, b):
    a, b = _int(a, "ceilDiv"), _int(b, "ceilDiv")
    if b <= 0:
        raise ExpressionError(f"ceilDiv() divisor must be positive, got {b}")
    return -(-a // b)


def _minmax(fn, name):
    def run(*args):
        if len(args) < 1:
            raise ExpressionError(f"{name}() needs at least one argument")
        if not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
            raise ExpressionError(f"{name}() expects numbers, got {args!r}")
        return fn(args)

    return run


def builtins(features: Iterable[str]) -> Mapping[str, Builtin]:
    """The functions in scope, ``f16Ok`` bound to the device profile's features (read-only: shared by every
    scope of a profile with or without shader-f16)."""
    return _builtins("shader-f16" in set(features))


@functools.lru_cache(maxsize=2)
def _builtins(has_f16: bool) -> Mapping[str, Builtin]:
    def f16_ok(dtype):
        if not isinstance(dtype, str):
            raise ExpressionError(f"f16Ok() expects a dtype name, got {dtype!r}")
        return dtype == "f32" or (dtype == "f16" and has_f16)

    fns = {
        "numel": _numel,
        "dim": _dim,
        "dtypeBytes": _dtype_bytes,
        "f16Ok": f16_ok,
        "ceilDiv": _ceil_div,
        "min": _minmax(min, "min"),
        "max": _minmax(max, "max"),
    }
    return MappingProxyType({name: Builtin(name, fn) for name, fn in fns.items()})


def _check_number(value):
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise SecurityError(f"integer result exceeds {MAX_INT_BITS} bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise SecurityError("float result is not finite")
    if isinstance(value, (str, tuple)) and len(value) > MAX_STRING:
        raise SecurityError(f"result longer than {MAX_STRING}")
    return value


_NUMBER = (int, float)


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset(["+", "-", "*", "/", "//", "%", "**"])
    intercepted_unops = frozenset(["-", "+"])

    def __init__(self):
        super().__init__(undefined=StrictUndefined, autoescape=False, optimized=True)
        self.globals.clear()
        self.filters.clear()
        self.tests.clear()

    def is_safe_attribute(self, obj, attr, value):
        return False

    def is_safe_callable(self, obj):
        return isinstance(obj, Builtin)

    def getattr(self, obj, attribute):
        if isinstance(obj, Namespace) and attribute in obj:
            return obj[attribute]
        return self.undefined(obj=obj, name=attribute)

    def getitem(self, obj, argument):
        if isinstance(obj, Namespace) and isinstance(argument, str) and argument in obj:
            return obj[argument]
        if isinstance(obj, tuple) and isinstance(argument, int) and not isinstance(argument, bool):
            if -len(obj) <= argument < len(obj):
                return obj[argument]
        return self.undefined(obj=obj, name=argument)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's signature)
        if not isinstance(__obj, Builtin):
            raise SecurityError(f"{__obj!r} is not callable in manifest expressions")
        if kwargs:
            raise SecurityError(f"{__obj.name}() takes positional arguments only")
        return __obj(*args)

    def call_binop(self, context, operator, left, right):
        if operator == "+" and isinstance(left, tuple) and isinstance(right, tuple):
            return _check_number(left + right)
        if not (isinstance(left, _NUMBER) and isinstance(right, _NUMBER)):
            raise SecurityError(f"operator {operator!r} needs numbers, got {left!r} and {right!r}")
        if operator == "**":
            if isinstance(right, int) and isinstance(left, int):
                if right < 0 or (abs(left) > 1 and right * math.log2(abs(left)) > MAX_INT_BITS):
                    raise SecurityError(f"{left} ** {right} is too large")
            elif abs(right) > 1024:
                raise SecurityError(f"exponent {right} is too large")
        return _check_number(self.binop_table[operator](left, right))

    def call_unop(self, context, operator, arg):
        if not isinstance(arg, _NUMBER):
            raise SecurityError(f"unary {operator!r} needs a number, got {arg!r}")
        return self.unop_table[operator](arg)


SANDBOX = _Sandbox()


def parse(source: Any, *, pointer: str = "", file: str | None = None) -> nodes.Expr:
    """Parse one expression (a JSON string, or a JSON literal taken as a constant)."""
    if isinstance(source, float) and not math.isfinite(source):  # JSON's 1e400 reads as inf
        raise ExpressionError(f"number {source!r} is not finite", pointer=pointer, file=file)
    if isinstance(source, bool) or isinstance(source, (int, float)) and not isinstance(source, bool):
        return nodes.Const(source, lineno=1)
    if not isinstance(source, str):
        raise ExpressionError(
            f"expected an expression string, number or boolean, got {type(source).__name__}", pointer=pointer, file=file
        )
    if len(source) > MAX_SOURCE:
        raise ExpressionError(f"expression is longer than {MAX_SOURCE} characters", pointer=pointer, file=file)
    try:
        parser = Parser(SANDBOX, source, state="variable")
        expr = parser.parse_expression()
        if not parser.stream.eos:
            raise ExpressionError(
                f"unexpected {parser.stream.current.value!r} after the expression",
                source=source,
                pointer=pointer,
                file=file,
            )
    except TemplateError as exc:
        raise ExpressionError(f"syntax error: {exc.message}", source=source, pointer=pointer, file=file) from None
    except RecursionError:
        raise ExpressionError("expression is nested too deeply", source=source, pointer=pointer, file=file) from None
    for const in expr.find_all(nodes.Const):  # a literal such as 1e999 reads as inf, which nothing can compile
        if isinstance(const.value, float) and not math.isfinite(const.value):
            raise ExpressionError(
                f"number literal {const.value!r} is not finite", source=source, pointer=pointer, file=file
            )
    return expr


# -- printing (for messages, reports and case analysis) ----------------------------------------

_BINOPS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**"}
_CMP = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in", "notin": "not in"}
_PREC = {
    "CondExpr": 1,
    "Or": 2,
    "And": 3,
    "Not": 4,
    "Compare": 5,
    "Add": 6,
    "Sub": 6,
    "Concat": 7,
    "Mul": 8,
    "Div": 8,
    "FloorDiv": 8,
    "Mod": 8,
    "Pow": 9,
    "Neg": 10,
    "Pos": 10,
}


def _prec(node) -> int:
    return _PREC.get(type(node).__name__, 11)


def unparse(node: nodes.Node) -> str:
    """Jinja AST back to source text, parenthesised only where precedence needs it."""
    kind = type(node).__name__

    def wrap(child, min_prec):
        text = unparse(child)
        return f"({text})" if _prec(child) < min_prec else text

    p = _prec(node)
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Const):
        v = node.value
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return repr(v)
    if isinstance(node, nodes.Getattr):
        return f"{wrap(node.node, 11)}.{node.attr}"
    if isinstance(node, nodes.Getitem):
        return f"{wrap(node.node, 11)}[{unparse(node.arg)}]"
    if isinstance(node, nodes.Call):
        return f"{wrap(node.node, 11)}({', '.join(unparse(a) for a in node.args)})"
    if kind in _BINOPS:
        # left-associative, except ** which is right-associative
        lp, rp = (p + 1, p) if kind == "Pow" else (p, p + 1)
        return f"{wrap(node.left, lp)} {_BINOPS[kind]} {wrap(node.right, rp)}"
    if isinstance(node, nodes.Concat):
        return " ~ ".join(wrap(n, p + 1) for n in node.nodes)
    if isinstance(node, (nodes.And, nodes.Or)):
        word = "and" if isinstance(node, nodes.And) else "or"
        return f"{wrap(node.left, p)} {word} {wrap(node.right, p + 1)}"
    if isinstance(node, nodes.Not):
        return f"not {wrap(node.node, p)}"
    if isinstance(node, nodes.Neg):
        return f"-{wrap(node.node, p)}"
    if isinstance(node, nodes.Pos):
        return f"+{wrap(node.node, p)}"
    if isinstance(node, nodes.Compare):
        parts = [wrap(node.expr, p + 1)]
        parts += [f"{_CMP[op.op]} {wrap(op.expr, p + 1)}" for op in node.ops]
        return " ".join(parts)
    if isinstance(node, nodes.CondExpr):
        text = f"{wrap(node.expr1, p + 1)} if {wrap(node.test, p + 1)}"
        return text + (f" else {wrap(node.expr2, p)}" if node.expr2 is not None else "")
    if isinstance(node, (nodes.Tuple, nodes.List)):
        inner = ", ".join(unparse(n) for n in node.items)
        return f"[{inner}]" if isinstance(node, nodes.List) else f"({inner}{',' if len(node.items) == 1 else ''})"
    raise ExpressionError(f"unsupported expression element {kind}")


def _self_and_descendants(node: nodes.Node, kind):
    if isinstance(node, kind):
        yield node
    yield from node.find_all(kind)


def names_used(node: nodes.Node) -> set[str]:
    """Top-level names an expression reads."""
    return {n.name for n in _self_and_descendants(node, nodes.Name)}


def attribute_paths(node: nodes.Node) -> set[tuple[str, ...]]:
    """Dotted paths an expression reads, such as ``("device", "limits", "maxBufferSize")``."""
    paths = set()

    def chain(n):
        if isinstance(n, nodes.Name):
            return (n.name,)
        if isinstance(n, nodes.Getattr):
            base = chain(n.node)
            return base + (n.attr,) if base else None
        return None

    for getattr_node in _self_and_descendants(node, nodes.Getattr):
        path = chain(getattr_node)
        if path:
            paths.add(path)
    # keep only maximal paths
    return {p for p in paths if not any(q != p and q[: len(p)] == p for q in paths)}


# -- rule tables, inlining and evaluation --------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """A named expression (a ``derive`` entry or a constant) with where it came from."""

    name: str
    tree: nodes.Expr
    pointer: str


@dataclass
class RuleTable:
    """Named rules visible to a set of expressions; inlines them on demand."""

    rules: dict[str, Rule]
    file: str | None = None
    _sizes: dict[str, int] = field(default_factory=dict, repr=False)

    def _tree_size(self, tree, stack) -> int:
        total = 0
        for node in _self_and_descendants(tree, nodes.Node):
            total += 1
            if isinstance(node, nodes.Name) and node.name in self.rules:
                total += self._rule_size(node.name, stack)
            if total > MAX_INLINED_NODES:
                break
        return total

    def _rule_size(self, name, stack) -> int:
        if name not in self._sizes:
            if name in stack:
                cycle = " -> ".join(stack[stack.index(name) :] + [name])
                raise ExpressionError(f"rules form a cycle: {cycle}", pointer=self.rules[name].pointer, file=self.file)
            self._sizes[name] = self._tree_size(self.rules[name].tree, stack + [name])
        return self._sizes[name]

    def inlined_size(self, tree: nodes.Expr, pointer: str = "") -> int:
        """The node count of ``tree`` once rules are inlined (counting stops past MAX_INLINED_NODES)."""
        try:
            return self._tree_size(tree, [])
        except RecursionError:
            raise ExpressionError("rules nest too deeply", pointer=pointer, file=self.file) from None

    def inline(self, tree: nodes.Expr, pointer: str = "") -> nodes.Expr:
        """A copy of ``tree`` with every rule name replaced by the rule's own (inlined) tree."""
        try:
            size = self._tree_size(tree, [])
        except RecursionError:
            raise ExpressionError("rules nest too deeply", pointer=pointer, file=self.file) from None
        if size > MAX_INLINED_NODES:
            raise ExpressionError(
                f"expression grows past {MAX_INLINED_NODES} nodes once rules are inlined",
                pointer=pointer,
                file=self.file,
            )
        # _tree_size has already refused cycles and oversize trees, so the copy below is bounded

        def inline_rule(node):
            if isinstance(node, nodes.Name) and node.name in self.rules:
                return rewrite(self.rules[node.name].tree, inline_rule)
            return None

        try:
            return rewrite(tree, inline_rule)
        except RecursionError:
            raise ExpressionError("rules nest too deeply", pointer=pointer, file=self.file) from None


def rewrite(tree: nodes.Node, replace: Callable[[nodes.Node], nodes.Node | None]) -> nodes.Node:
    """A copy of ``tree`` in which every node that ``replace`` maps to a node (not None) is replaced by it."""
    replaced = replace(tree)
    if replaced is not None:
        return replaced
    clone = copy.copy(tree)
    for fname in clone.fields:
        value = getattr(clone, fname)
        if isinstance(value, nodes.Node):
            setattr(clone, fname, rewrite(value, replace))
        elif isinstance(value, list):
            setattr(clone, fname, [rewrite(v, replace) if isinstance(v, nodes.Node) else v for v in value])
    return clone


def _concat(*parts):
    for p in parts:
        if isinstance(p, Absent):
            p._fail()
    return _check_number("".join(str(p) for p in parts))


_CONCAT = Builtin("~", _concat)


def _guard_concat(tree):
    """Rewrite ``a ~ b`` into a call of a length-checked join (an internal name manifests cannot use)."""

    def concat_call(node):
        if isinstance(node, nodes.Concat):
            return nodes.Call(nodes.Name("__concat", "load"), [_guard_concat(n) for n in node.nodes], [], None, None)
        return None

    return rewrite(tree, concat_call)


#: Run expressions as closures over their tree (:mod:`conformance.engine.closures`) where they qualify; False runs
#: every one through Jinja2's template machinery (``scripts/plan_digest.py --jinja``, the tests comparing the two).
FAST_PATH = True


class Compiled:
    """One inlined expression compiled for the sandbox: as closures where :func:`closures.closure` takes the tree,
    else as a Jinja2 template; either way evaluated through the same sandbox hooks, with the same errors."""

    def __init__(self, tree: nodes.Expr, *, source: str, pointer: str, file: str | None):
        self.source, self.pointer, self.file = source, pointer, file
        tree = _guard_concat(tree)
        self._run = closure(tree, SANDBOX, {"__concat": _CONCAT}) if FAST_PATH else None
        self.fast = self._run is not None
        if self._run is None:
            self._run = self._template(tree, source, pointer, file)

    @staticmethod
    def _template(tree: nodes.Expr, source: str, pointer: str, file: str | None) -> Callable[[Mapping], Any]:
        body = nodes.Template([nodes.Assign(nodes.Name("result", "store"), tree, lineno=1)], lineno=1)
        body.set_environment(SANDBOX)
        try:
            template = SANDBOX.from_string(body)
        except (RecursionError, SyntaxError, MemoryError):  # Python's parser: "too many nested parentheses"
            raise ExpressionError(
                "expression is nested too deeply", source=source, pointer=pointer, file=file
            ) from None
        except TemplateError as exc:
            raise ExpressionError(str(exc), source=source, pointer=pointer, file=file) from None
        expr = TemplateExpression(template, undefined_to_none=False)
        return lambda scope: expr(**scope, __concat=_CONCAT)

    def __call__(self, scope: Mapping[str, Any]) -> Any:
        try:
            value = self._run(scope)
            if isinstance(value, StrictUndefined):
                str(value)  # raises the UndefinedError with the missing name
            if isinstance(value, Absent):
                value._fail()  # an absent input as a result: fail here, where the error gets the pointer
            return value
        except ExpressionError as exc:
            raise ExpressionError(exc.detail, source=self.source, pointer=self.pointer, file=self.file) from None
        except UndefinedError as exc:
            raise ExpressionError(
                f"undefined name: {exc.message}", source=self.source, pointer=self.pointer, file=self.file
            ) from None
        except SecurityError as exc:
            raise ExpressionError(
                f"refused by the sandbox: {exc}", source=self.source, pointer=self.pointer, file=self.file
            ) from None
        except RecursionError:
            raise ExpressionError(
                "evaluation nested too deeply", source=self.source, pointer=self.pointer, file=self.file
            ) from None
        except (ArithmeticError, TypeError, ValueError, TemplateError, MemoryError) as exc:
            raise ExpressionError(
                f"{type(exc).__name__}: {exc}", source=self.source, pointer=self.pointer, file=self.file
            ) from None


class Compilations:
    """What the evaluators of one manifest compiled: by inlined source text (shared by every variant, so a
    predicate the variants share compiles once) and the nodes compiled so far, capped at MAX_COMPILED_NODES."""

    def __init__(self):
        self.by_source: dict[str, Compiled] = {}
        self.nodes = 0

    def get(self, inlined: nodes.Expr, *, source: str, pointer: str, file: str | None) -> Compiled:
        key = unparse(inlined)
        hit = self.by_source.get(key)
        if hit is None:
            self.nodes += sum(1 for _ in _self_and_descendants(inlined, nodes.Node))
            if self.nodes > MAX_COMPILED_NODES:
                raise ExpressionError(
                    f"the manifest's expressions add up to more than {MAX_COMPILED_NODES} nodes "
                    f"once rules are inlined (each distinct expression counts once)",
                    source=source,
                    pointer=pointer,
                    file=file,
                )
            hit = self.by_source[key] = Compiled(inlined, source=source, pointer=pointer, file=file)
        return hit


class Evaluator:
    """Compiles expressions against a rule table, caching by tree (then by source text, then by inlined text in
    ``compilations``, which the evaluators of one manifest share)."""

    def __init__(self, table: RuleTable, compilations: Compilations | None = None):
        self.table = table
        self.compilations = compilations if compilations is not None else Compilations()
        self._cache: dict[str, Compiled] = {}
        self._by_tree: dict[int, tuple[nodes.Expr, Compiled]] = {}  # the tree is kept so its id stays unique
        self._texts: dict[int, tuple[nodes.Expr, str]] = {}  # unparsed, for explanations (same way)

    def compiled(self, tree: nodes.Expr, pointer: str = "") -> Compiled:
        known = self._by_tree.get(id(tree))
        if known is not None and known[0] is tree:
            return known[1]
        source = unparse(tree)
        hit = self._cache.get(source)
        if hit is None:
            hit = self.compilations.get(
                self.table.inline(tree, pointer), source=source, pointer=pointer, file=self.table.file
            )
            self._cache[source] = hit
        self._by_tree[id(tree)] = (tree, hit)
        return hit

    def evaluate(self, tree: nodes.Expr, scope: Mapping[str, Any], pointer: str = "") -> Any:
        return self.compiled(tree, pointer)(scope)

    def explain_false(self, tree: nodes.Expr, scope: Mapping[str, Any]) -> str:
        """Why ``tree`` is false: the first false conjunct and the values of its operands."""
        if isinstance(tree, nodes.Name) and tree.name in self.table.rules:
            return f"{tree.name} is false: " + self._why(self.table.rules[tree.name].tree, scope)
        return f"{self._text(tree)} is false: " + self._why(tree, scope)

    def _text(self, tree: nodes.Expr) -> str:
        """``unparse(tree)``, once per tree."""
        known = self._texts.get(id(tree))
        if known is None or known[0] is not tree:
            known = self._texts[id(tree)] = (tree, unparse(tree))
        return known[1]

    def _why(self, tree, scope) -> str:
        if isinstance(tree, nodes.Name) and tree.name in self.table.rules:
            return f"{tree.name} is false: " + self._why(self.table.rules[tree.name].tree, scope)
        if isinstance(tree, nodes.And):
            left_true = bool(self.evaluate(tree.left, scope))
            return self._why(tree.right if left_true else tree.left, scope)
        if isinstance(tree, nodes.Or):
            return f"{self._why(tree.left, scope)}; and {self._why(tree.right, scope)}"
        operands = self._operands(tree)
        shown = [f"{self._text(o)} = {format_value(self.evaluate(o, scope))}" for o in operands]
        if isinstance(tree, nodes.Call):
            shown.insert(0, f"{self._text(tree)} = {format_value(self.evaluate(tree, scope))}")
        return ", ".join(shown) if shown else f"{self._text(tree)} = {format_value(self.evaluate(tree, scope))}"

    def _operands(self, tree) -> list[nodes.Expr]:
        if isinstance(tree, nodes.Not):
            return [tree.node]
        if isinstance(tree, nodes.Compare):
            found = [tree.expr] + [op.expr for op in tree.ops]
        elif isinstance(tree, nodes.Call):
            found = list(tree.args)
        else:
            found = [tree]
        return [o for o in found if not isinstance(o, nodes.Const)]


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
