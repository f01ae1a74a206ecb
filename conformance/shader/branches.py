"""Template branch coverage, computed by rendering: which ``{% if %}`` / ``{% elif %}`` / ``{% else %}`` branch,
``{% for %}`` body and macro each case's plan renders.

The sandbox of :mod:`conformance.shader.render` parses every template of the package; before it is compiled, its
Jinja2 AST gets a marker statement at the start of each branch body, loop body and macro body (and an empty
``else`` where an ``if`` has none, to see a condition that never fails). A marker writes nothing: the WGSL is the
one :func:`conformance.shader.render.render` gives, byte for byte (``tests/cases/test_template_branches.py``).
Rendering each distinct pass context once, the markers that ran say which branches the case's plan renders.

A branch, loop body or macro that no case renders is *dead* for those cases (``cases.weakness.dead_branches``
turns them into ``dead-template-branch`` flags); one rendered only into passes that dispatch nothing (empty
tensors) is *idle*: in the WGSL, but no invocation runs it, so no case checks it (``idle-template-branch``
flags); an ``if`` whose condition always held is only noted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import nodes

from conformance.engine.package import Package
from conformance.errors import ConformanceError
from conformance.shader.render import TemplateSandbox, case_plans, context, render

#: The global a marker calls: an identifier no template of this suite uses.
HIT = "__branch_hit__"
#: Kinds of branch: ``fallthrough`` is the implicit else of an ``if`` without one (no code: never dead).
KINDS = ("if", "elif", "else", "fallthrough", "for", "for-else", "macro")
_TAG = re.compile(r"\{%[-+]?\s*(if|elif|else|endif|for|endfor|macro|endmacro)\b(.*?)[-+]?%\}", re.S)


@dataclass(frozen=True)
class Branch:
    template: str  # the template's name in its package
    line: int  # the line of its tag
    kind: str  # one of KINDS
    condition: str  # what must hold for it to render: the tag's source text

    @property
    def code(self) -> bool:
        """Whether the branch is code a template author wrote (a fall-through is not)."""
        return self.kind != "fallthrough"

    def where(self, root: Path | str) -> str:
        return f"{Path(root) / self.template}:{self.line}"


@dataclass
class TemplateCoverage:
    """One template of one package: its branches and the cases that render each (ids, in case order)."""

    package: str
    root: str
    template: str
    branches: list[Branch]
    hits: dict[Branch, list[str]] = field(default_factory=dict)
    error: str | None = None  # the template could not be parsed: no branch is known
    digest: str | None = None  # sha256 of its text: packages sharing a byte-identical template pool their cases
    dispatched: set[Branch] = field(default_factory=set)  # rendered by a pass that runs (threads > 0)

    @property
    def dead(self) -> list[Branch]:
        return [b for b in self.branches if b.code and not self.hits.get(b)]

    @property
    def idle(self) -> list[Branch]:
        """Branches rendered only by passes that dispatch nothing (empty tensors): in the WGSL, never run."""
        return [b for b in self.branches if b.code and self.hits.get(b) and b not in self.dispatched]

    @property
    def always(self) -> list[Branch]:
        """``if`` chains rendered whose fall-through never was: some branch always held."""
        return [
            b
            for b in self.branches
            if b.kind == "fallthrough"
            and not self.hits.get(b)
            and self.hits.get(Branch(b.template, b.line, "if", b.condition.split("`")[1]))
        ]

    def as_dict(self) -> dict:
        """As the conformance report carries it."""
        return {
            "package": self.package,
            "template": self.template,
            "error": self.error,
            "branches": [
                {
                    "line": b.line,
                    "kind": b.kind,
                    "condition": b.condition,
                    "cases": len(self.hits.get(b, [])),
                    "example": (self.hits.get(b) or [None])[0],
                    "dispatched": b in self.dispatched,
                }
                for b in self.branches
            ],
        }

    def report(self) -> str:
        where = f"{Path(self.root) / self.template}"
        if self.error:
            return f"  template {where}: not parsed: {self.error}"
        code = [b for b in self.branches if b.code]
        lines = [f"  template {where}: {len(code) - len(self.dead)}/{len(code)} branches rendered"]
        for b in self.branches:
            ids = self.hits.get(b, [])
            if b.kind == "fallthrough":
                if b in self.always:
                    lines.append(f"    {b.line}: {b.condition}: always held (never fell through)")
                continue
            shown = f"{len(ids)} case(s), e.g. {ids[0]}" if ids else "DEAD: no case renders it"
            if ids and b not in self.dispatched:
                shown += "; IDLE: only in passes that dispatch nothing"
            lines.append(f"    {b.line}: {b.kind} {b.condition}: {shown}")
        return "\n".join(lines)


def _tags(source: str) -> list[tuple[int, str, str]]:
    """(line, keyword, rest) of every if/elif/else/for/macro tag and its end, in source order."""
    return [
        (source.count("\n", 0, m.start()) + 1, m.group(1), " ".join(m.group(2).split())) for m in _TAG.finditer(source)
    ]


def _else_lines(source: str) -> dict[tuple[str, int, int], int]:
    """(keyword, line, ordinal on that line) of each ``if`` / ``for`` tag -> the line of its ``else`` tag."""
    stack, found, seen = [], {}, {}
    for line, word, _ in _tags(source):
        if word in ("if", "for", "macro"):
            ordinal = seen.get((word, line), 0)
            seen[(word, line)] = ordinal + 1
            stack.append((word, line, ordinal))
        elif word == "else" and stack:
            found[stack[-1]] = line
        elif word.startswith("end") and stack:
            stack.pop()
    return found


class _CoverageSandbox(TemplateSandbox):
    """The render sandbox with a marker at the start of every branch: :attr:`branches` per template parsed,
    :attr:`ran` the branches the current render ran."""

    def __init__(self, package: Package):
        super().__init__(package)
        self.branches: dict[str, list[Branch]] = {}
        self._all: list[Branch] = []
        self.ran: set[Branch] = set()
        self.globals[HIT] = self._hit

    def _hit(self, index: int) -> str:
        self.ran.add(self._all[index])
        return ""

    def _parse(self, source, name, filename):
        tree = super()._parse(source, name, filename)
        self.branches[name] = self._instrument(tree, name, source)
        return tree

    def _marker(self, branch: Branch, lineno: int) -> nodes.Node:
        self._all.append(branch)
        call = nodes.Call(
            nodes.Name(HIT, "load", lineno=lineno),
            [nodes.Const(len(self._all) - 1, lineno=lineno)],
            [],
            None,
            None,
            lineno=lineno,
        )
        return nodes.ExprStmt(call, lineno=lineno)

    def _instrument(self, tree: nodes.Template, name: str, source: str) -> list[Branch]:
        texts = {(line, word): rest for line, word, rest in _tags(source)}  # first tag of a kind per line
        elses = _else_lines(source)
        found: list[Branch] = []
        ordinals: dict[tuple[str, int], int] = {}

        def ordinal(word: str, line: int) -> int:
            n = ordinals.get((word, line), 0)
            ordinals[(word, line)] = n + 1
            return n

        def add(kind: str, line: int, condition: str, body: list) -> None:
            branch = Branch(name, line, kind, condition)
            found.append(branch)
            body.insert(0, self._marker(branch, line))

        # in source order: If and For nodes are found in the order of their tags (elif ones are If nodes too)
        elifs = {id(e) for node in tree.find_all(nodes.If) for e in node.elif_}
        for node in sorted(tree.find_all((nodes.If, nodes.For, nodes.Macro)), key=lambda n: n.lineno):
            if isinstance(node, nodes.Macro):
                add("macro", node.lineno, f"{node.name} is called", node.body)
            elif isinstance(node, nodes.For):
                head = texts.get((node.lineno, "for"), "")
                else_line = elses.get(("for", node.lineno, ordinal("for", node.lineno)))
                add("for", node.lineno, f"{head}: iterates", node.body)
                if node.else_:
                    add("for-else", else_line or node.lineno, f"{head}: nothing to iterate", node.else_)
            elif id(node) not in elifs:
                chain = [node, *node.elif_]
                conditions = [texts.get((n.lineno, "elif" if n is not node else "if"), "?") for n in chain]
                else_line = elses.get(("if", node.lineno, ordinal("if", node.lineno)))
                for n, text in zip(chain, conditions):
                    add("if" if n is node else "elif", n.lineno, text, n.body)
                none_held = "none of " + "; ".join(f"`{c}`" for c in conditions) + " held"
                if node.else_:
                    add("else", else_line or node.lineno, none_held, node.else_)
                else:
                    add(
                        "fallthrough",
                        node.lineno,
                        f"`{conditions[0]}`" + (" or an elif" if node.elif_ else ""),
                        node.else_,
                    )
        return sorted(found, key=lambda b: (b.line, KINDS.index(b.kind)))


def template_names(package: Package) -> list[str]:
    """Every ``*.jinja`` file of the package, relative to its root (includes and templates no pass names too)."""
    root = Path(package.root)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.jinja") if p.is_file())


def _context_key(shader: str, ctx: dict) -> str:
    return shader + "\0" + json.dumps(ctx, sort_keys=True, default=repr)


def template_coverage(package: Package, cases) -> list[TemplateCoverage]:
    """Per template of ``package``: its branches and which of ``cases`` (accepted ones: they have a plan)
    render each, by rendering each distinct pass context once."""
    env = _CoverageSandbox(package)
    errors: dict[str, str] = {}
    for name in template_names(package):
        try:
            env.get_template(name)  # read confined to the package (Package.read_template), size-capped
        except Exception as err:  # noqa: BLE001 -- an untrusted template that does not parse: said, not fatal
            errors[name] = f"{type(err).__name__}: {err}"
    ran_by_context: dict[str, frozenset[Branch]] = {}
    hits: dict[Branch, list[str]] = {}
    dispatched: set[Branch] = set()
    for case, plan in case_plans(package, cases):
        for pass_plan in plan.passes:
            key = _context_key(pass_plan.shader, context(plan, pass_plan))
            if key not in ran_by_context:
                env.ran = set()
                try:
                    render(package, plan, pass_plan, env)
                except ConformanceError as err:
                    errors.setdefault(pass_plan.shader, str(err))
                ran_by_context[key] = frozenset(env.ran)
            if not pass_plan.dispatch.empty:
                dispatched |= ran_by_context[key]
            for branch in ran_by_context[key]:
                ids = hits.setdefault(branch, [])
                if not ids or ids[-1] != case.id:
                    ids.append(case.id)
    names = sorted(set(env.branches) | set(errors))
    return [
        TemplateCoverage(
            package.name,
            str(package.root),
            name,
            env.branches.get(name, []),
            {b: hits[b] for b in env.branches.get(name, []) if b in hits},
            errors.get(name),
            env.sources.get(name),
            dispatched & set(env.branches.get(name, [])),
        )
        for name in names
    ]


def pooled(coverages: list[TemplateCoverage]) -> list[TemplateCoverage]:
    """The same coverages with the hits of every byte-identical template (same name and digest: one template
    shared by several packages, as lint requires) merged: a branch of a shared template is dead only when no
    case of any package given renders it."""
    union: dict[tuple[str, str | None], dict[Branch, list[str]]] = {}
    ran: dict[tuple[str, str | None], set[Branch]] = {}
    for cov in coverages:
        merged = union.setdefault((cov.template, cov.digest), {})
        for branch, ids in cov.hits.items():
            merged.setdefault(branch, []).extend(ids)
        ran.setdefault((cov.template, cov.digest), set()).update(cov.dispatched)
    return [
        TemplateCoverage(
            c.package,
            c.root,
            c.template,
            c.branches,
            dict(union[(c.template, c.digest)]) if c.digest else dict(c.hits),
            c.error,
            c.digest,
            set(ran[(c.template, c.digest)]) if c.digest else set(c.dispatched),
        )
        for c in coverages
    ]
