"""Render a pass's WGSL from its package's Jinja2 template, in a sandbox.

The render context is documented in ``specs/README.md`` ("Template context").
Templates are untrusted: they run in Jinja2's immutable sandbox with strict
undefined, can include only files of their own package, and a failure names
the template and line.
"""

from __future__ import annotations

import traceback

from jinja2 import FunctionLoader, StrictUndefined
from jinja2.exceptions import SecurityError, TemplateError as JinjaTemplateError, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import TemplateError
from .package import Package
from .plan import PassPlan, Plan

MAX_OUTPUT = 1 << 20


class _TemplateSandbox(ImmutableSandboxedEnvironment):
    def __init__(self, package: Package):
        # (source, filename, uptodate): the filename lets errors name the template's line
        super().__init__(loader=FunctionLoader(
                             lambda name: (package.read_template(name), str(package.template_path(name)), lambda: True)),
                         undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                         trim_blocks=True, lstrip_blocks=True, auto_reload=False)
        for unsafe in ("lipsum", "cycler", "joiner", "namespace", "dict"):
            self.globals.pop(unsafe, None)


def context(plan: Plan, pass_plan: PassPlan) -> dict:
    """What a template sees: the constants by name plus the binding/dispatch description."""
    bindings = [{"index": b.index, "name": b.name, "buffer": b.buffer_type, "elementType": b.element_type,
                 "length": b.length, "arg": b.arg, "struct": b.struct_name, "declaration": b.declaration}
                for b in pass_plan.bindings]
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


def _template_line(exc: BaseException, name: str) -> int | None:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename and f.filename.endswith(name)]
    return lines[-1] if lines else None


def render(package: Package, plan: Plan, pass_plan: PassPlan) -> str:
    env = _TemplateSandbox(package)
    name = pass_plan.shader
    try:
        template = env.get_template(name)
        text = template.render(context(plan, pass_plan))
    except TemplateError:
        raise
    except TemplateSyntaxError as exc:
        raise TemplateError(f"{package.root / name}:{exc.lineno}: template syntax error: {exc.message}") from None
    except UndefinedError as exc:
        line = _template_line(exc, name)
        raise TemplateError(f"{package.root / name}:{line or '?'}: pass {pass_plan.name} (variant {plan.variant}): "
                            f"{exc.message} (the render context is documented in specs/README.md)") from None
    except SecurityError as exc:
        line = _template_line(exc, name)
        raise TemplateError(f"{package.root / name}:{line or '?'}: refused by the template sandbox: {exc}") from None
    except (JinjaTemplateError, ArithmeticError, TypeError, ValueError, RecursionError, MemoryError) as exc:
        line = _template_line(exc, name)
        raise TemplateError(f"{package.root / name}:{line or '?'}: rendering failed: {type(exc).__name__}: {exc}") \
            from None
    if len(text) > MAX_OUTPUT:
        raise TemplateError(f"{package.root / name}: rendered shader is larger than {MAX_OUTPUT} bytes")
    return text
