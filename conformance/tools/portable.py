"""The portable subset: what Jinja2 (this suite) and @huggingface/jinja (a JavaScript loader) do alike.

``check(package, generated, engine)`` renders the package's templates on every distinct template context of its
generated calls, and evaluates every expression (outputs, ``derive``, constants, ``when``, dispatch, uniform
fields) on every generated call, with both engines; each difference becomes a finding naming the construct that
caused it and the rewrite that avoids it (specs/README.md, "The portable subset"). Only what Jinja2 evaluates
or renders without error is compared: the suite's own checks report the rest.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

from conformance.engine.call import check_types
from conformance.engine.dtypes import WGSL_BYTES
from conformance.engine.expressions import (
    Absent,
    Builtin,
    Compilations,
    Compiled,
    Evaluator,
    Namespace,
    RuleTable,
    unparse,
)
from conformance.engine.package import Package
from conformance.engine.planner import Planner, scope_for
from conformance.errors import ConformanceError
from conformance.shader.render import (
    MAX_OUTPUT,
    MAX_VALUE,
    RENDER_WORK_LIMIT,
    case_plans,
    context,
    render,
    render_observed,
    template_environment,
)
from conformance.tools.jsjinja import ENGINE

#: JavaScript numbers are doubles: integers beyond this are not all representable.
SAFE_INTEGER = 2**53
_ORDER = ("lt", "lteq", "gt", "gteq")  # the comparisons @huggingface/jinja refuses on strings

#: construct -> (what it is called in a finding, the rewrite that avoids it)
CONSTRUCTS = {
    "import": (
        "`{% import %}`",
        "@huggingface/jinja has no import, include or template loader: paste the macros "
        "into the template that calls them (and call them without the module prefix)",
    ),
    "include": (
        "`{% include %}`",
        "@huggingface/jinja has no include or template loader: paste the included text into the template",
    ),
    "exponent": (
        "an exponent literal",
        "@huggingface/jinja does not parse exponents: write the number in "
        "positional digits (0.000...), or as a quotient such as `1 / 2 ** 126`",
    ),
    "modulo": (
        "negative modulo",
        "Jinja2's `%` takes the sign of the divisor, JavaScript's of the dividend: keep "
        "the dividend non-negative, or write `(a % b + b) % b`",
    ),
    "list-equality": (
        "list equality",
        "@huggingface/jinja compares lists by identity (`[1, 2] == [1, 2]` is "
        "false): compare the elements (`a[0] == b[0] and ...`), or their `numel`",
    ),
    "big-integer": (
        "an integer beyond 2^53",
        "JavaScript numbers are doubles and round it: keep intermediate "
        "values below 2^53, e.g. divide before multiplying (`a <= c // b` "
        "for `a * b <= c`)",
    ),
    "chained": ("a chained comparison", "@huggingface/jinja has no `a < b < c`: write `a < b and b < c`"),
    "string-order": (
        "an ordering of strings",
        "@huggingface/jinja orders numbers only (`<` on strings is an error): compare strings with `==`, `!=` or `in`",
    ),
    "concat": (
        "a boolean or None joined with `~`",
        "Jinja2 writes True/None, @huggingface/jinja true/null: join a string instead (`'true' if x else 'false'`)",
    ),
    "budget": (
        "a render over the Python sandbox's budget",
        "keep loops and ranges small: a branch that only @huggingface/jinja takes is bounded like Jinja2's",
    ),
    "printf": ("printf-style `%` on a string", "@huggingface/jinja has no string formatting: join with `~`"),
    "boolean": (
        "a rendered boolean",
        "Jinja2 writes True/False, @huggingface/jinja true/false: test it "
        "(`{% if x %}`) or write `{{ 'true' if x else 'false' }}`",
    ),
    "none": (
        "a rendered None",
        "Jinja2 writes None, @huggingface/jinja nothing: test it (`{% if x is none %}`) instead of writing it",
    ),
    "float": (
        "a rendered float",
        "Jinja2 writes Python's repr (1e-05), @huggingface/jinja JavaScript's "
        "(0.00001): keep floats out of the text (a uniform), or write them from integers",
    ),
    "list": (
        "a rendered list",
        "Jinja2 writes Python's repr (('a', 1.0)), @huggingface/jinja JSON ([\"a\", 1]): "
        "join it (`{{ xs | join(', ') }}`)",
    ),
}


@dataclass
class Stats:
    contexts: int = 0  # distinct (template, context) pairs rendered by both engines
    expressions: int = 0  # evaluations compared: per expression, one per distinct value of the names it reads
    unrendered: int = 0  # distinct (template, context) pairs Jinja2 failed to render (the render check's errors)

    def nothing_compared(self) -> str | None:
        """Why no template was compared, or None when some was. A check without a difference found is a pass
        only where it rendered something: a template that renders in no context (every render an error, which
        lint reports) or a package that accepts no call would otherwise pass, having compared no text at all."""
        if self.contexts:
            return None
        if self.unrendered:
            return (
                f"no template compared: Jinja2 rendered none of the {self.unrendered} template context(s) of "
                f"the generated calls (each a render error; `python -m conformance lint` names them)"
            )
        return "no template compared: no generated call is accepted, so no template context was rendered"


# -- the values both sides see ----------------------------------------------------------------------
def to_json(value):
    """A scope or template context as JSON: namespaces as objects, shapes as lists, an absent input as null."""
    if isinstance(value, (Namespace, dict)):
        return {k: to_json(v) for k, v in value.items() if not isinstance(v, Builtin)}
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, Absent) or value is None:
        return None
    return value


def kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (tuple, list)):
        return "list"
    return "none" if value is None else "object"


def shown(value) -> str:
    return json.dumps(to_json(value)) if kind(value) != "object" else repr(value)


def _literal(value) -> str:
    """A JSON number or boolean standing for itself, as expression text (floats positional: no exponent)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = format(Decimal(repr(value)), "f")
        return text if "." in text else text + ".0"
    return str(value)


def resolve(raw, pointer: str):
    """The manifest value at a JSON pointer."""
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        raw = raw[int(part)] if isinstance(raw, list) else raw[part]
    return raw


#: Parses templates for the constructs a finding names (the render's own sandbox settings, no loader).
_PARSER = Environment(trim_blocks=True, lstrip_blocks=True)


def exponent_literals(source, state: str | None = "variable") -> list[tuple[int, str]]:
    """(line, text) of every float literal written with an exponent: in an expression (``state="variable"``) or in
    a template (None)."""
    if not isinstance(source, str):
        return []
    tokens = _PARSER.lexer.tokeniter(source, None, state=state)
    return [(line, text) for line, token, text in tokens if token == "float" and re.search("[eE]", text)]


# -- expressions ------------------------------------------------------------------------------------
@dataclass
class _Expression:
    pointer: str
    compiled: Compiled
    tree: nodes.Expr  # inlined
    js: str  # inlined, as the text a JS loader would evaluate
    pointers: tuple[str, ...]  # its own pointer and those of the rules it inlines
    on_outputs: bool  # evaluated before output shapes exist (an output's shape or rank)


class _Expressions:
    """Every expression of a manifest, each inlined for Python (the AST) and for JavaScript (the text)."""

    def __init__(self, manifest):
        self.m = manifest
        self.items: list[_Expression] = []
        self._js: dict[tuple[int, str], tuple[str, tuple[str, ...]]] = {}
        self._seen: set[tuple[str, int]] = set()
        # the check's own compile budget (MAX_COMPILED_NODES), starting from what planning compiled already: rules
        # compiled on their own here must not use up the manifest's
        self._compilations = Compilations()
        self._compilations.by_source = dict(manifest.compilations.by_source)
        empty = RuleTable({}, file=manifest.file)
        for out in manifest.outputs:
            for expr in (out.shape, out.rank):
                if expr is not None:
                    self._add(expr.tree, expr.pointer, empty, on_outputs=True)
        for rule in manifest.base_table.rules.values():
            self._add(rule.tree, rule.pointer, manifest.base_table)
        for v in manifest.variants:
            table = v.evaluator.table
            own = [r for n, r in table.rules.items() if r.pointer.startswith(v.pointer + "/")]
            for tree, pointer in [(e.tree, e.pointer) for e in v.when] + [(r.tree, r.pointer) for r in own]:
                self._add(tree, pointer, table)
            for p in v.passes:
                exprs = [p.threads, p.workgroup_size] + [f.value for b in p.bindings for f in b.fields]
                for e in exprs:
                    self._add(e.tree, e.pointer, table)

    def _add(self, tree, pointer, table, on_outputs=False):
        if (pointer, id(table)) in self._seen:  # a binding set twice in one variant: once (per variant, since
            return  # its fields may read the variant's constants)
        self._seen.add((pointer, id(table)))
        compiled = Evaluator(table, self._compilations).compiled(tree, pointer)
        js, pointers = self._text(resolve(self.m.raw, pointer), table, pointer)
        self.items.append(_Expression(pointer, compiled, table.inline(tree, pointer), js, pointers, on_outputs))

    def _text(self, source, table: RuleTable, pointer: str) -> tuple[str, tuple[str, ...]]:
        """The source with every rule name replaced by its own (inlined) source in parentheses: the original
        literals, unlike ``unparse``, which writes floats as Python's repr."""
        if not isinstance(source, str):
            return _literal(source), (pointer,)
        parts, pointers, after_dot = [], [pointer], False
        for _, token, text in _PARSER.lexer.tokeniter(source, None, state="variable"):
            if token == "name" and not after_dot and text in table.rules:
                rule = table.rules[text]
                key = (id(table), text)
                if key not in self._js:
                    self._js[key] = self._text(resolve(self.m.raw, rule.pointer), table, rule.pointer)
                inner, inner_pointers = self._js[key]
                parts.append(f"({inner})")
                pointers += inner_pointers
            else:
                parts.append(text)
            if token != "whitespace":
                after_dot = token == "operator" and text == "."
        return "".join(parts), tuple(dict.fromkeys(pointers))


def _scopes(package: Package, generated):
    """(case, scope before outputs, full scope or None) for every generated call that passes the contract."""
    m, planner = package.manifest, Planner(package.manifest)
    for case in generated:
        try:
            call = planner.call_for(case.call_args(), case.profile, case.tunables)
            base = scope_for(m, call, check_types(m, call))
        except ConformanceError:
            continue
        try:
            full = planner.scope(call)
        except ConformanceError:
            full = None
        yield case, base, full


def _same(py, js: dict) -> bool:
    return kind(py) == js.get("kind") and to_json(py) == js.get("value")


@dataclass
class _Difference:
    unit: str = "evaluation"  # what count counts: expression evaluations or template contexts
    count: int = 0
    first: str = ""
    detail: str = ""
    used_by: set = field(default_factory=set)


def reads(tree: nodes.Node) -> tuple[tuple[str, ...], ...]:
    """The scope paths an inlined expression reads (``("shapes", "X")``, ``("device", "features")`` for f16Ok): two
    calls that agree on them give it the same value, so it is compared once for both."""
    found = set()

    def walk(node):
        path, base = [], node
        while isinstance(base, nodes.Getattr):
            path.insert(0, base.attr)
            base = base.node
        if isinstance(base, nodes.Name) and path:
            found.add((base.name, *path))
            return
        if isinstance(node, nodes.Name):
            found.add(("device", "features") if node.name == "f16Ok" else (node.name,))
        for child in node.iter_child_nodes():
            walk(child)

    walk(tree)
    return tuple(sorted(found))


def _at(scope, path):
    value = scope
    for part in path:
        if not isinstance(value, (Namespace, dict)) or part not in value:
            return None
        value = value[part]
    return None if isinstance(value, Builtin) else to_json(value)


def check_expressions(package: Package, generated, engine, stats: Stats) -> dict[tuple, _Difference]:
    exprs = _Expressions(package.manifest)
    paths = [reads(item.tree) for item in exprs.items]
    scopes, jobs, meta, seen = [], [], [], set()
    for case, base, full in _scopes(package, generated):
        for which, scope in (("base", base), ("full", full)):
            if scope is None:
                continue
            index, values = None, {}
            for e, item in enumerate(exprs.items):
                if item.on_outputs != (which == "base"):
                    continue
                for p in paths[e]:
                    if p not in values:
                        values[p] = json.dumps(_at(scope, p))
                key = (e, tuple(values[p] for p in paths[e]))
                if key in seen:
                    continue
                seen.add(key)
                try:
                    value = item.compiled(scope)
                except ConformanceError:
                    continue  # Jinja2 refuses it for this call: the planner reports that, not this check
                if index is None:
                    index = len(scopes)
                    scopes.append(to_json(scope))
                jobs.append([index, e])
                meta.append((case, scope, item, value))
    if not jobs:
        return {}
    results = engine.request(
        {
            "op": "eval",
            "bytes": WGSL_BYTES,
            "scopes": scopes,
            "exprs": [i.js for i in exprs.items],
            "jobs": jobs,
            "budget": JS_BUDGET,
        }
    )
    stats.expressions += len(jobs)
    found: dict[tuple, _Difference] = defaultdict(_Difference)
    compiled: dict[str, Compiled] = {}
    for (case, scope, item, value), js in zip(meta, results):
        if "error" not in js and _same(value, js):
            continue
        for pointer, construct, detail in _diagnose(package, item, scope, value, js, compiled):
            diff = found[(package.manifest.file, pointer, construct)]
            diff.count += 1
            diff.first = diff.first or case.id
            diff.detail = diff.detail or detail
            diff.used_by.add(item.pointer)
    return found


def _diagnose(package, item: _Expression, scope, value, js, compiled) -> list[tuple[str, str, str]]:
    """(pointer, construct, detail) for what makes the engines differ on this expression and call."""
    raw, out = package.manifest.raw, []
    for pointer in item.pointers:
        for _, text in exponent_literals(resolve(raw, pointer)):
            out.append((pointer, "exponent", f"`{text}`"))
    if out:
        return out
    evaluate = _SubEvaluator(item, scope, compiled)
    for node in [item.tree, *item.tree.find_all(nodes.Expr)]:
        if isinstance(node, nodes.Mod):
            left, right = evaluate(node.left), evaluate(node.right)
            if _numbers(left, right) and right != 0 and left % right != math.fmod(left, right):
                out.append(
                    (
                        item.pointer,
                        "modulo",
                        f"`{unparse(node)}` with {left} % {right}: Jinja2 gives "
                        f"{left % right}, JavaScript {math.fmod(left, right):g}",
                    )
                )
        elif isinstance(node, nodes.Compare):
            operands = [evaluate(node.expr)] + [evaluate(op.expr) for op in node.ops]
            pairs = list(zip(operands, operands[1:], node.ops))
            if any(isinstance(a, tuple) and isinstance(b, tuple) for a, b, _ in pairs):
                out.append((item.pointer, "list-equality", f"`{unparse(node)}`"))
            if len(node.ops) > 1:
                out.append((item.pointer, "chained", f"`{unparse(node)}`"))
            if any(isinstance(a, str) and isinstance(b, str) and op.op in _ORDER for a, b, op in pairs):
                out.append((item.pointer, "string-order", f"`{unparse(node)}`"))
        elif isinstance(node, nodes.Concat):
            if any(isinstance(evaluate(n), bool) or evaluate(n) is None for n in node.nodes):
                out.append((item.pointer, "concat", f"`{unparse(node)}`"))
        result = evaluate(node) if not isinstance(node, (nodes.Const, nodes.Name)) else None
        if isinstance(result, int) and not isinstance(result, bool) and abs(result) > SAFE_INTEGER:
            out.append((item.pointer, "big-integer", f"`{unparse(node)}` = {result}"))
    if out:
        return list({construct: (p, construct, d) for p, construct, d in reversed(out)}.values())  # first of each
    theirs = js.get("error") or f"{js.get('kind')} {json.dumps(js.get('value'))}"
    return [
        (
            item.pointer,
            "other",
            f"Jinja2 gives {kind(value)} {shown(value)}, {ENGINE} {theirs} (evaluating `{item.js[:300]}`)",
        )
    ]


def _numbers(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


class _SubEvaluator:
    """Values of the parts of an inlined expression for one call (None where Jinja2 refuses the part alone);
    ``compiled`` (by text) is shared by the calls of one package: a construct in a predicate meets every call."""

    def __init__(self, item: _Expression, scope, compiled: dict[str, Compiled]):
        self.item, self.scope, self.values, self.compiled = item, scope, {}, compiled

    def __call__(self, node):
        text = unparse(node)
        if text not in self.values:
            try:
                if text not in self.compiled:
                    self.compiled[text] = Compiled(node, source=text, pointer=self.item.pointer, file=None)
                self.values[text] = self.compiled[text](self.scope)
            except ConformanceError:
                self.values[text] = None
        return self.values[text]


# -- templates --------------------------------------------------------------------------------------
def _contexts(package: Package, generated):
    """(case, plan, pass plan, context as JSON) per distinct template context of the accepted generated calls."""
    seen = set()
    for case, plan in case_plans(package, generated):
        for pass_plan in plan.passes:
            ctx = to_json(context(plan, pass_plan))
            key = (pass_plan.shader, json.dumps(ctx, sort_keys=True))
            if key not in seen:
                seen.add(key)
                yield case, plan, pass_plan, ctx


def check_templates(package: Package, generated, engine, stats: Stats) -> dict[tuple, _Difference]:
    rendered, jobs, env = [], [], template_environment(package)
    for case, plan, pass_plan, ctx in _contexts(package, generated):
        try:
            text = render(package, plan, pass_plan, env)
        except ConformanceError:
            stats.unrendered += 1
            continue  # the render check reports it
        rendered.append((case, plan, pass_plan, text))
        jobs.append([pass_plan.shader, ctx])
    if not jobs:
        return {}
    templates = {name: package.read_template(name) for name in {j[0] for j in jobs}}
    results = engine.request({"op": "render", "templates": templates, "jobs": jobs, "budget": JS_BUDGET})
    stats.contexts += len(jobs)
    found: dict[tuple, _Difference] = defaultdict(_Difference)
    for (case, plan, pass_plan, text), js in zip(rendered, results):
        if js.get("text") == text:
            continue
        name = pass_plan.shader
        if js.get("budget"):
            causes = [(None, "budget", f"in {ENGINE}: {js['error']}")]
        elif "error" in js:
            causes = _unparsable(package, name, templates[name], js["error"])
        else:
            causes = _rendered_differently(package, plan, pass_plan, text, js["text"])
        for line, construct, detail in causes:
            diff = found[(str(package.template_path(name)), str(line or ""), construct)]
            diff.unit = "context"
            diff.count += 1
            diff.first = diff.first or f"{case.id}, pass {pass_plan.name}"
            diff.detail = diff.detail or detail
    return found


#: The Python sandbox's budgets of one render, given to the JavaScript engine for each of its jobs
#: (``jinja_js.mjs``): a template branch only @huggingface/jinja takes is bounded as Jinja2's are.
JS_BUDGET = {"work": RENDER_WORK_LIMIT, "value": MAX_VALUE, "output": MAX_OUTPUT}


def _unparsable(package, name: str, source: str, error: str) -> list[tuple]:
    """Why @huggingface/jinja cannot parse or run a template Jinja2 renders: the constructs it lacks, by line."""
    out = [(line, "exponent", f"`{text}`") for line, text in exponent_literals(source, state=None)]
    try:
        tree = _PARSER.parse(source)
    except TemplateSyntaxError:
        tree = None
    if tree is not None:
        out += [
            (n.lineno, "import", f"of {n.template.value!r}" if isinstance(n.template, nodes.Const) else "")
            for n in tree.find_all((nodes.Import, nodes.FromImport))
        ]
        out += [(n.lineno, "include", "") for n in tree.find_all(nodes.Include)]
        out += [(n.lineno, "chained", "") for n in tree.find_all(nodes.Compare) if len(n.ops) > 1]
    return out or [(None, "other", f"{ENGINE} cannot render it: {error}")]


def _rendered_differently(package, plan, pass_plan, ours: str, theirs: str) -> list[tuple]:
    """The constructs whose output differs, by template line, from a second render that watches every value."""
    seen = []

    def observe(what, value, line):
        if what == "output":
            construct = _output_construct(value)
            if construct:
                seen.append((line, construct, f"`{value}`"))
        elif what == "concat":
            if any(isinstance(p, bool) or p is None for p in value):
                seen.append((line, "concat", f"of {', '.join(repr(p) for p in value)[:120]}"))
        else:
            operator, left, right, result = value
            if operator == "%" and _numbers(left, right) and right != 0 and left % right != math.fmod(left, right):
                seen.append(
                    (line, "modulo", f"{left} % {right}: Jinja2 gives {result}, JavaScript {math.fmod(left, right):g}")
                )
            elif _numbers(result) and isinstance(result, int) and abs(result) > SAFE_INTEGER:
                seen.append((line, "big-integer", f"{left} {operator} {right} = {result}"))
            elif operator == "%" and isinstance(left, str):
                seen.append((line, "printf", f"`{left[:40]!r} % ...`"))

    try:
        render_observed(package, plan, pass_plan, observe)
    except ConformanceError:
        pass
    ours_lines, theirs_lines = ours.split("\n"), theirs.split("\n")
    at = next(
        (i for i, (a, b) in enumerate(zip(ours_lines, theirs_lines)) if a != b), min(len(ours_lines), len(theirs_lines))
    )
    where = (
        f"the WGSL first differs at line {at + 1}: Jinja2 {_line_of(ours_lines, at)}, "
        f"{ENGINE} {_line_of(theirs_lines, at)}"
    )
    constants = _constant_lines(package.read_template(pass_plan.shader))
    return [(line or constants.get(d), c, f"{d}; {where}") for line, c, d in dict.fromkeys(seen)] or [
        (None, "other", where)
    ]


def _constant_lines(source: str) -> dict[str, int]:
    """`{{ literal }}` outputs Jinja folds while compiling (so no render frame has their line): the backquoted
    value, as the finding shows it, -> its first template line."""
    try:
        tree = _PARSER.parse(source)
    except TemplateSyntaxError:
        return {}
    found = {}
    for output in tree.find_all(nodes.Output):
        for const in output.nodes:
            if isinstance(const, nodes.Const) and not isinstance(const.value, str):
                found.setdefault(f"`{const.value}`", const.lineno)
    return found


def _line_of(lines: list[str], i: int) -> str:
    return f"`{lines[i][:160]}`" if i < len(lines) else "(ends)"


def _output_construct(value) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "none"
    if isinstance(value, float) and re.search("[eE]|inf|nan", repr(value)):
        return "float"
    if isinstance(value, int) and abs(value) > SAFE_INTEGER:
        return "big-integer"
    if isinstance(value, tuple) or isinstance(value, list) and not all(_integer(v) for v in value):
        return "list"  # a list of integers renders alike: [1, 2]
    return None


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= SAFE_INTEGER


# -- all of it --------------------------------------------------------------------------------------
def messages(found: dict[tuple, _Difference]) -> list[tuple[str, str, str]]:
    """(path, pointer or template line, message) per construct and place."""
    out = []
    for (path, where, construct), diff in found.items():
        name, rewrite = CONSTRUCTS.get(construct, ("a difference", "keep to the portable subset (specs/README.md)"))
        used = sorted(diff.used_by - {where})
        uses = f"; used by {', '.join(used[:3])}{' ...' if len(used) > 3 else ''}" if used else ""
        detail = f" {diff.detail}" if diff.detail and construct != "other" else ""
        head = (
            f"not portable to {ENGINE}: {name}{detail}" if construct != "other" else f"{ENGINE} differs: {diff.detail}"
        )
        tail = f" ({diff.count} {diff.unit}{'s' if diff.count > 1 else ''}; e.g. case {diff.first}{uses}): {rewrite}"
        out.append((path, where, head + tail))
    return out


def check(package: Package, generated, engine) -> tuple[list[tuple[str, str, str]], Stats]:
    """(path, pointer, message) per difference, and what was compared."""
    stats = Stats()
    found = {
        **check_expressions(package, generated, engine, stats),
        **check_templates(package, generated, engine, stats),
    }
    return messages(found), stats
