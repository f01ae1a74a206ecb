"""Render a pass's WGSL from its package's Jinja2 template, in a sandbox.

The render context is documented in ``specs/README.md`` ("Template context").
Templates are untrusted: they run in Jinja2's immutable sandbox with strict
undefined, can include only files of their own package, and a failure names
the template and line.

Budgets are counted in work, not seconds, so a package gets the same verdict on every machine: each line of
template code run, each intercepted operation (arithmetic, ``~``, comparisons, subscripts and slices, calls,
filters) and each character or item it builds or scans is one unit (:data:`RENDER_WORK_LIMIT` per render,
:data:`PACKAGE_RENDER_WORK` per loaded package, compiling charged per byte of template). The wall clock is only a
backstop against a hang that no counted operation sees (:data:`RENDER_TIME_BACKSTOP`).
"""

from __future__ import annotations

import math
import operator
import re
import sys
import threading
import time
import traceback
import weakref

from jinja2 import FunctionLoader, StrictUndefined, nodes
from jinja2.compiler import CodeGenerator
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError
from jinja2.exceptions import TemplateError as JinjaTemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from conformance.engine.package import Package, template_digest
from conformance.engine.plan import PassPlan, Plan
from conformance.engine.planner import Planner
from conformance.errors import ConformanceError, TemplateError

MAX_OUTPUT = 1 << 20
MAX_VALUE = 1 << 20  # the longest string or sequence an operator, '~' or a filter may build
MAX_INT_BITS = 4096  # the largest integer '**' may build
RENDER_WORK_LIMIT = 1 << 22  # work units of one render: the largest shipped render, compiling included, uses under 4 %
MAX_TEMPLATE = 64 << 10  # bytes of one template
COMPILE_WORK_PER_BYTE = 16  # what compiling one byte of template is charged (it costs about 16 line runs)
PACKAGE_RENDER_WORK = (
    1 << 27
)  # work units per loaded package, all its renders together (a shipped one spends under 13 M in a run)
RENDER_TIME_BACKSTOP = 60.0  # seconds: only against a hang no counted operation sees; never a verdict on speed
_SPENT: "weakref.WeakKeyDictionary[Package, int]" = weakref.WeakKeyDictionary()  # loaded package -> work units
_ENVIRONMENTS: "weakref.WeakKeyDictionary[Package, TemplateSandbox]" = weakref.WeakKeyDictionary()
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
_PRINTF_WIDTH = re.compile(r"%[-#0 +]*(\*|\d{5,})|%[-#0 +]*\d*\.(\*|\d{5,})")
_FORMAT_WIDTH = re.compile(r"\{[^{}]*:[^{}]*(\d{5,}|\{)")  # str.format: huge or nested width/precision


def _size(value) -> int:
    """The characters or items of ``value`` an operation builds or scans (0 for a scalar)."""
    return len(value) if isinstance(value, (str, bytes, list, tuple, dict)) else 0


class _BoundedCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b``, comparisons and slices to calls the environment charges for (Jinja would compile them
    to plain Python operators, which cannot be intercepted), and refuses a non-finite number literal
    (``1e999``), which Jinja would compile to the undefined name ``inf``."""

    def visit_Const(self, node, frame):
        if isinstance(node.value, float) and not math.isfinite(node.value):
            self.fail(f"number literal {node.value!r} is not finite", node.lineno)
        super().visit_Const(node, frame)

    def visit_Concat(self, node, frame):
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit_Compare(self, node, frame):
        self.write("environment.compare(")
        self.visit(node.expr, frame)
        self.write(", (")
        for operand in node.ops:
            self.write(f"({operand.op!r}, ")
            self.visit(operand.expr, frame)
            self.write("), ")
        self.write("))")

    def visit_Getitem(self, node, frame):
        if not isinstance(node.arg, nodes.Slice):
            return super().visit_Getitem(node, frame)
        self.write("environment.getitem(")
        self.visit(node.node, frame)
        self.write(", environment.make_slice(")
        for part in (node.arg.start, node.arg.stop, node.arg.step):
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
            self.write(", ")
        self.write("))")


def _bounded_filter(env, name, fn):
    """``fn`` charged for what it scans and builds, refusing huge integer arguments, printf widths, replace
    blow-ups and over-long results."""

    def run(*args, **kwargs):
        env.charge(1 + sum(_size(a) for a in args))
        for arg in (*args[1:], *kwargs.values()):
            if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_VALUE:
                raise SecurityError(f"filter {name}: argument {arg} is too large")
        values = [a for a in args if isinstance(a, str)]
        if name == "format" and values and _PRINTF_WIDTH.search(values[0]):
            raise SecurityError("filter format: width or precision too large")
        if name == "replace" and len(values) >= 3 and len(values[0]) * max(1, len(values[2])) > MAX_VALUE:
            raise SecurityError("filter replace: the result could exceed the size cap")
        result = fn(*args, **kwargs)
        if isinstance(result, (str, list, tuple)) and len(result) > MAX_VALUE:
            raise SecurityError(f"filter {name}: result longer than {MAX_VALUE}")
        env.charge(_size(result))
        return result

    if hasattr(fn, "jinja_pass_arg"):  # pass_context / pass_eval_context / pass_environment
        run.jinja_pass_arg = fn.jinja_pass_arg
    return run


class TemplateSandbox(ImmutableSandboxedEnvironment):
    """The render sandbox: Jinja2's immutable sandbox, strict undefined, each operation charged to the render's
    work budget. :func:`render` renders in one; a subclass watches a render (``branches``, ``_ObservedSandbox``)."""

    code_generator_class = _BoundedCodeGenerator
    intercepted_binops = frozenset(["*", "**", "%", "+"])

    def __init__(self, package: Package):
        self.sources: dict[str, str] = {}  # every template this environment loaded (includes too): name -> sha256
        self.used: dict[str, str] | None = None  # while a render of render_with_sources runs: the templates it uses
        self.lock = threading.Lock()  # one render at a time (a timed-out run's thread may still render)
        # (source, filename, uptodate): the filename lets errors name the template's line
        super().__init__(
            loader=FunctionLoader(self._load),
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
            auto_reload=False,
        )
        for unsafe in ("lipsum", "cycler", "joiner", "namespace", "dict"):
            self.globals.pop(unsafe, None)
        self.filters = {name: _bounded_filter(self, name, fn) for name, fn in self.filters.items()}
        self.package = package
        self.work = 0  # units this render has spent so far
        self.work_limit = RENDER_WORK_LIMIT
        self.deadline = math.inf

    def _load(self, name: str):
        text = self.package.read_template(name)
        if len(text.encode("utf-8")) > MAX_TEMPLATE:
            raise TemplateError(f"{self.package.root / name}: template is larger than {MAX_TEMPLATE} bytes")
        self.sources[name] = template_digest(text)
        self.charge(len(text.encode("utf-8")) * COMPILE_WORK_PER_BYTE)  # compiling is linear in the bytes
        return text, str(self.package.template_path(name)), lambda: True

    def _load_template(self, name, globals):
        template = super()._load_template(name, globals)  # compiled once per environment, then from its cache
        if self.used is not None:
            self.used[name] = self.sources[name]
        return template

    def _parse(self, source, name, filename):
        """The template's AST, refusing a non-finite number literal (``1e999``) with its line."""
        tree = super()._parse(source, name, filename)
        for const in tree.find_all(nodes.Const):
            if isinstance(const.value, float) and not math.isfinite(const.value):
                raise TemplateSyntaxError(f"number literal {const.value!r} is not finite", const.lineno, name, filename)
        return tree

    def charge(self, units: int) -> None:
        """Spend ``units`` of the render's work budget (and check the hang backstop)."""
        self.work += units
        if self.work > self.work_limit:
            budget = (
                "RENDER_WORK_LIMIT"
                if self.work_limit == RENDER_WORK_LIMIT
                else "what is left of the package's PACKAGE_RENDER_WORK"
            )
            raise SecurityError(
                f"rendering needs more than {self.work_limit} units of work ({budget}: a unit "
                f"per line run, per operation and per character or item built or scanned)"
            )
        if time.monotonic() > self.deadline:
            raise SecurityError(f"rendering ran past the {RENDER_TIME_BACKSTOP:g} s backstop (RENDER_TIME_BACKSTOP)")

    def compare(self, left, ops):
        """``left op1 a op2 b ...`` as Python chains it, charged for the operands it scans."""
        for op, right in ops:
            self.charge(1 + (_size(right) if op in ("in", "notin") else min(_size(left), _size(right))))
            if not _COMPARE[op](left, right):
                return False
            left = right
        return True

    @staticmethod
    def make_slice(start, stop, step):
        return slice(start, stop, step)

    def getitem(self, obj, argument):
        self.charge(1)
        result = super().getitem(obj, argument)
        self.charge(_size(result) if isinstance(argument, slice) else 0)
        return result

    def getattr(self, obj, attribute):
        self.charge(1)
        return super().getattr(obj, attribute)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's signature)
        """Every call, charged for what it scans and builds; string methods (center, ljust, replace, join...)
        held to MAX_VALUE before they run."""
        owner = getattr(__obj, "__self__", None)
        __self.charge(1 + _size(owner) + sum(_size(a) for a in args))
        if isinstance(owner, str):
            for arg in (*args, *kwargs.values()):
                if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_VALUE:
                    raise SecurityError(f"str.{__obj.__name__}: argument {arg} is too large")
            if _str_call_bound(owner, __obj.__name__, args) > MAX_VALUE:
                raise SecurityError(f"str.{__obj.__name__}: the result could be longer than {MAX_VALUE}")
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, (str, list, tuple)) and len(result) > MAX_VALUE:
            raise SecurityError(f"a call built a result longer than {MAX_VALUE}")
        __self.charge(_size(result))
        return result

    def concat(self, parts):
        self.charge(1 + sum(_size(p) for p in parts))
        text = "".join(str(p) for p in parts)
        if len(text) > MAX_VALUE:
            raise SecurityError(f"'~' built a string longer than {MAX_VALUE}")
        self.charge(len(text))
        return text

    def wrap_str_format(self, value):
        wrapped = super().wrap_str_format(value)
        if wrapped is not None and isinstance(value.__self__, str) and _FORMAT_WIDTH.search(value.__self__):

            def refuse(*args, **kwargs):
                raise SecurityError("str.format width or precision too large (or given by an argument)")

            return refuse
        return wrapped

    def call_binop(self, context, operator, left, right):
        self.charge(1 + _size(left) + _size(right))
        if (
            isinstance(left, int)
            and isinstance(right, int)
            and operator in ("*", "+")
            and left.bit_length() + right.bit_length() > MAX_INT_BITS
        ):
            raise SecurityError(f"'{operator}' would build an integer of more than {MAX_INT_BITS} bits")
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_VALUE:
                    raise SecurityError(f"'*' would build {len(seq) * n} items, more than {MAX_VALUE}")
        elif operator == "**":
            if (
                isinstance(left, int)
                and isinstance(right, int)
                and abs(left) > 1
                and right > 0
                and right * abs(left).bit_length() > MAX_INT_BITS
            ):
                raise SecurityError(f"{left} ** {right} is too large")
        elif operator == "%" and isinstance(left, str) and _PRINTF_WIDTH.search(left):
            raise SecurityError("'%' format width or precision too large")
        elif (
            operator == "+"
            and isinstance(left, (str, list, tuple))
            and isinstance(right, (str, list, tuple))
            and len(left) + len(right) > MAX_VALUE
        ):
            raise SecurityError(f"'+' would build more than {MAX_VALUE} items")
        result = super().call_binop(context, operator, left, right)
        self.charge(_size(result) + (result.bit_length() >> 6 if isinstance(result, int) else 0))
        return result


class _ObservedSandbox(TemplateSandbox):
    """The sandbox telling ``observe(kind, value, line)`` each value a ``{{ }}`` writes (kind ``"output"``) and
    each intercepted operation (``"binop"``: operator, left, right, result; ``"concat"``: the parts ``~`` joins),
    with the template line (None for a constant Jinja folds while compiling). The portable-subset check uses it to
    name what a JS engine renders differently."""

    def __init__(self, package: Package, observe):
        super().__init__(package)
        self._observe = observe
        self.finalize = self._finalize

    def _line(self) -> int | None:
        frame = sys._getframe(2)
        while frame is not None:
            name = self._by_file.get(frame.f_code.co_filename)
            if name is not None:
                return self.get_template(name).get_corresponding_lineno(frame.f_lineno)
            frame = frame.f_back
        return None

    @property
    def _by_file(self) -> dict[str, str]:
        return {str(self.package.template_path(n)): n for n in self.sources}

    def _finalize(self, value):
        self._observe("output", value, self._line())
        return value

    def call_binop(self, context, operator, left, right):
        result = super().call_binop(context, operator, left, right)
        self._observe("binop", (operator, left, right, result), self._line())
        return result

    def concat(self, parts):
        parts = list(parts)
        self._observe("concat", parts, self._line())
        return super().concat(parts)


def _str_call_bound(owner: str, method: str, args: tuple) -> int:
    """An upper bound on the length of ``owner.method(*args)`` for the methods that can grow a string."""
    ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    if method == "replace" and len(args) >= 2 and isinstance(args[1], str):
        return len(owner) * max(1, len(args[1])) + len(args[1])
    if method == "join" and args and isinstance(args[0], (list, tuple)):
        return len(owner) * len(args[0]) + sum(len(str(p)) for p in args[0])
    if method == "expandtabs":
        return len(owner) * max([8, *ints])
    return max([len(owner), *ints])  # center, ljust, rjust, zfill: the width; the others shrink or keep


def _generate_bounded(env, template, ctx) -> str:
    """Render charging every line of the template's own code to the work budget, with a cap on the output while
    it streams."""
    env.deadline = time.monotonic() + RENDER_TIME_BACKSTOP

    def line(frame, event, arg):
        env.charge(1)
        return line

    def call(frame, event, arg):  # trace only the template's compiled code
        return line if frame.f_globals.get("environment") is env else None

    previous = sys.gettrace()
    sys.settrace(call)
    try:
        chunks, size = [], 0
        for chunk in template.generate(ctx):
            env.charge(len(chunk))
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise TemplateError(f"rendered shader is larger than {MAX_OUTPUT} bytes")
            chunks.append(chunk)
        return "".join(chunks)
    finally:
        sys.settrace(previous)


def context(plan: Plan, pass_plan: PassPlan) -> dict:
    """What a template sees: the constants by name plus the binding/dispatch description."""
    bindings = [
        {
            "index": b.index,
            "name": b.name,
            "buffer": b.buffer_type,
            "elementType": b.element_type,
            "length": b.length,
            "arg": b.arg,
            "struct": b.struct_name,
            "declaration": b.declaration,
            "packing": b.packing,
        }
        for b in pass_plan.bindings
    ]
    structs = list(pass_plan.struct_declarations)
    return {
        **pass_plan.constants,
        "constants": dict(pass_plan.constants),
        "bindings": bindings,
        "binding": {b["name"]: b for b in bindings},
        "structs": structs,
        "declarations": "\n".join(structs + [b["declaration"] for b in bindings]),
        "workgroupSize": pass_plan.dispatch.workgroup_size,
        "passName": pass_plan.name,
        "passId": pass_plan.id,
        "variant": plan.variant,
        "op": plan.op,
    }


def case_plans(package: Package, cases):
    """(case, plan) of each accepted case of ``package`` that plans: what its templates are rendered for (a stale
    case that no longer plans is left out: it fails where it runs)."""
    planner = Planner(package.manifest)
    for case in cases:
        if not case.accepted:
            continue
        try:
            plan = planner.plan_case(case.call_args(), case.profile, case.tunables)
        except ConformanceError:
            continue
        yield case, plan


def _template_line(exc: BaseException, name: str) -> int | None:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename and f.filename.endswith(name)]
    return lines[-1] if lines else None


def render(package: Package, plan: Plan, pass_plan: PassPlan, environment: TemplateSandbox | None = None) -> str:
    """The WGSL; renders given the same ``template_environment(package)`` compile each template once."""
    return _render(environment or TemplateSandbox(package), package, plan, pass_plan)


def template_environment(package: Package) -> TemplateSandbox:
    """A template environment for many renders of one package (each still under every per-render limit)."""
    return TemplateSandbox(package)


def render_observed(package: Package, plan: Plan, pass_plan: PassPlan, observe) -> str:
    """The WGSL, with ``observe(kind, value, line)`` told every output value and operation (``_ObservedSandbox``)."""
    return _render(_ObservedSandbox(package, observe), package, plan, pass_plan)


def work_spent(package: Package) -> int:
    """The work units ``package`` has spent on compiling and rendering so far in this process."""
    return _SPENT.get(package, 0)


def render_with_sources(package: Package, plan: Plan, pass_plan: PassPlan) -> tuple[str, dict[str, str]]:
    """The WGSL, and the sha256 of every template it was rendered from (the named one and its includes).

    Renders of one package share an environment, so each template is compiled once, not once per render; an
    environment any of whose templates changed on disk since it compiled them is replaced by a fresh one."""
    env = _ENVIRONMENTS.get(package)
    if env is None or not package.templates_unchanged(env.sources):
        env = _ENVIRONMENTS[package] = TemplateSandbox(package)
    if not env.lock.acquire(blocking=False):
        env = TemplateSandbox(package)  # another thread renders with it: this render gets its own
        env.lock.acquire()
    try:
        env.used = {}
        return _render(env, package, plan, pass_plan), dict(env.used)
    finally:
        env.used = None
        env.lock.release()


def _render(env: TemplateSandbox, package: Package, plan: Plan, pass_plan: PassPlan) -> str:
    name = pass_plan.shader
    spent = _SPENT.get(package, 0)
    if spent > PACKAGE_RENDER_WORK:
        raise TemplateError(
            f"{package.root / name}: the package has spent its {PACKAGE_RENDER_WORK} units of "
            f"template compiling and rendering (PACKAGE_RENDER_WORK)"
        )
    env.work, env.work_limit = 0, min(RENDER_WORK_LIMIT, PACKAGE_RENDER_WORK - spent)  # an environment may serve
    try:  # many renders
        template = env.get_template(name)
        text = _generate_bounded(env, template, context(plan, pass_plan))
    except TemplateError as exc:
        where = str(package.root / name)
        raise (exc if where in str(exc) else TemplateError(f"{where}: {exc}")) from None
    except TemplateSyntaxError as exc:
        raise TemplateError(f"{package.root / name}:{exc.lineno}: template syntax error: {exc.message}") from None
    except SyntaxError as exc:  # Python's own limits on the compiled template ("too many nested parentheses")
        raise TemplateError(f"{package.root / name}:?: template nested too deeply to compile: {exc.msg}") from None
    except UndefinedError as exc:
        line = _template_line(exc, name)
        raise TemplateError(
            f"{package.root / name}:{line or '?'}: pass {pass_plan.name} (variant {plan.variant}): "
            f"{exc.message} (the render context is documented in specs/README.md)"
        ) from None
    except SecurityError as exc:
        line = _template_line(exc, name)
        raise TemplateError(f"{package.root / name}:{line or '?'}: refused by the template sandbox: {exc}") from None
    except (JinjaTemplateError, ArithmeticError, TypeError, ValueError, RecursionError, MemoryError) as exc:
        line = _template_line(exc, name)
        raise TemplateError(
            f"{package.root / name}:{line or '?'}: rendering failed: {type(exc).__name__}: {exc}"
        ) from None
    finally:
        _SPENT[package] = _SPENT.get(package, 0) + env.work
    return text
