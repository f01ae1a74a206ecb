"""Mutants of a package's shader templates and manifest, and the template mutants that are never rendered."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import cases as case_generator
from conformance.engine.package import Package, load_package
from conformance.engine.planner import Planner
from conformance.files import copy_package, read_confined
from conformance.shader.render import context, render, template_environment


@dataclass
class Mutant:
    id: str
    package: str  # op id
    file: str  # the mutated file, relative to the package root
    kind: str
    description: str
    old: str = ""
    new: str = ""
    status: str = "pending"  # killed | survived | equivalent | alternative | error
    killed_by: str | None = None
    detail: str = ""
    seconds: float = 0.0
    equivalence: str | None = None
    _apply: Callable | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("_apply", None)
        return d

    @property
    def slug(self) -> str:
        """The id as a directory name."""
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", self.id)[:150]

    def materialize(self, package_dir: Path, dest: Path) -> Path:
        """Copy the package to ``dest`` and apply this mutation to the copy; returns ``dest``."""
        copy_package(package_dir, dest)
        path = dest / self.file
        path.write_text(self._apply(path.read_text()))
        return dest


# -- template mutants ------------------------------------------------------------------------------
_OPERATORS = [
    ("arith", r"(?<=[\w\)\]]) \+ (?=[\w\(\-])", " - "),
    ("arith", r"(?<=[\w\)\]]) - (?=[\w\(])", " + "),
    ("arith", r"(?<=[\w\)\]]) \* (?=[\w\(\-])", " / "),
    ("arith", r"(?<=[\w\)\]]) / (?=[\w\(])", " * "),
    ("bounds", r" >= ", " > "),
    ("bounds", r" < ", " <= "),
    ("bounds", r" > ", " >= "),
    ("bounds", r" <= ", " < "),
]
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.])")
_SPECIALS = [
    ("tail-guard", r"if \(i \+ 3u \* stride < params\.count\)", "if (true)", "the vec4Tail full-quad guard removed"),
    ("tail-guard", r"  if \(i >= stride\) \{ return; \}\n", "", "the vec4Tail early return removed"),
    ("tail-guard", r"  if \(i >= params\.count\) \{ return; \}\n", "", "an `i >= count` guard removed"),
    (
        "tail-guard",
        r"e < params\.count; e \+= stride",
        "e < params.count + stride; e += stride",
        "the tail loop runs past count",
    ),
    ("bias-dropped", r"\n *v \+= vec4<f32>\(f32\(bias\[.*?\);", "", "a vector bias add removed"),
    ("bias-dropped", r" \+ f32\(bias\[[^\]]*\]\)", "", "a scalar bias add removed"),
    ("bias-index", r"% HIDDEN", "/ HIDDEN", "bias indexed by row (`/ HIDDEN`) instead of column"),
    ("bias-index", r"bias\[b \+ 1u\]", "bias[b]", "vec4 bias lane 1 reads lane 0"),
    ("bias-index", r"bias\[e % HIDDEN\]", "bias[(e + 1u) % HIDDEN]", "scalar bias index shifted by one"),
    ("bias-index", r"bias\[e\.y % HIDDEN\]", "bias[e.x % HIDDEN]", "tail quad bias lane 1 reads lane 0"),
    ("bias-index", r"bias\[i % HIDDEN\]", "bias[(i + 1u) % HIDDEN]", "scalar bias index shifted by one"),
    ("erf-tanh", r'approximate == "tanh"', 'approximate == "__swapped__"', "the tanh branch unreachable"),
    ("f16-f32", r"\{% if usesF16 %\}", "{% if not usesF16 %}", "`enable f16` on the wrong dtype"),
    ("f16-f32", r'gelu_fn\("gelu1", "f32"\)', 'gelu_fn("gelu1", scalar)', "scalar math in the storage dtype"),
    (
        "f16-f32",
        r"return select\(x \* p, \{\{ T \}\}\(0\.0\), x < \{\{ T \}\}\(-CLAMP\)\);",
        "return select(x * p, {{ T }}(0.0), x < {{ T }}(-CLAMP)) * {{ T }}(1.0009765625);",
        "result scaled by one f16 ULP (1 + 2**-10)",
    ),
    (
        "clamp",
        r"return select\(x \* p, \{\{ T \}\}\(0\.0\), x < \{\{ T \}\}\(-CLAMP\)\);",
        "return x * p;",
        "the negative-tail cut to 0 removed",
    ),
    # row reductions (one workgroup per row, a tree over workgroup memory)
    ("barrier", r"\n *workgroupBarrier\(\);", "", "a workgroup barrier removed"),
    ("shared-index", r"\[lid \+ \{\{ s \}\}u\]", "[lid + {{ s }}u - 1u]", "tree: the partner slot off by one"),
    (
        "shared-index",
        r"partial\[0\] \* params\.invCols",
        "partial[1] * params.invCols",
        "the reduced value read from slot 1, not 0",
    ),
    ("shared-index", r"partial\[0\]\)", "partial[1])", "the reduced value read from slot 1, not 0"),
    (
        "shared-bound",
        r"lid \+ \{\{ s \}\}u < \{\{ size \}\}u",
        "lid + {{ s }}u <= {{ size }}u",
        "tree: the partial stride's bound off by one",
    ),
    (
        "pow2",
        r"\{% if 2 \* s > size %\}lid \+ \{\{ s \}\}u < \{\{ size \}\}u\{% else %\}lid < \{\{ s \}\}u\{% endif %\}",
        "lid < {{ s }}u",
        "tree: assumes a power-of-two workgroup (every partner slot exists)",
    ),
    (
        "pow2",
        r"range\(15, -1, -1\) if 2 \*\* k < size",
        "range(15, -1, -1) if 2 ** k <= size // 2",
        "tree: strides from size / 2 down (a power-of-two workgroup assumed: slots past the largest power of two "
        "are never folded)",
    ),
    (
        "row-index",
        r"let row = wid\.x \+ nwg\.x \* \(wid\.y \+ nwg\.y \* wid\.z\);",
        "let row = wid.x;",
        "the row index ignores the split dispatch",
    ),
    (
        "row-index",
        r"  if \(row >= params\.rows\) \{ return; \}\n",
        "",
        "workgroups past the last row (a split dispatch) do not return",
    ),
]


#: Reductions that drop lanes, invocations or the final combine (killed by the extremes of cases.extremes), and
#: barriers missing from single steps of the tree (races: run under --stress). Replacements are match templates
#: (``\\1`` is the first group).
_REDUCTION_SPECIALS = [
    (
        "lane-dropped",
        r"max\(max\(v\.x, v\.y\), max\(v\.z, v\.w\)\)",
        "max(v.x, v.y)",
        "the lanes' maximum ignores lanes z and w",
    ),
    ("lane-dropped", r"\(v\.x \+ v\.y\) \+ \(v\.z \+ v\.w\)", "(v.x + v.y) + v.z", "the lanes' sum drops lane w"),
    (
        "invocation-dropped",
        r'\{\{ ((?:rows\.)?)tree\("partial", workgroupSize, "max"\) \}\}\n  let m = \{\{ V \}\}\(partial\[0\]\);',
        r'let m = {{ V }}({{ \1start("partial", workgroupSize) }}[0]);',  # macros imported (rows.) or inline
        "the row maximum skips the workgroup's reduction: invocation 0's own maximum",
    ),
    (
        "invocation-dropped",
        r'(\{\{ (?:rows\.)?start\("partial", workgroupSize\) \}\}\[lid\] = )(lanes(?:_sum)?\(.*\));',
        r"\1select(\2, 0.0, lid == WG - 1u);",
        "the sum drops the last invocation's partial",
    ),
    (
        "invocation-dropped",
        r'(\{\{ (?:rows\.)?start\("partial", workgroupSize\) \}\}\[lid\] = )(lanes_max\(.*\));',
        r"\1select(\2, LOWEST, lid == WG - 1u);",
        "the maximum drops the last invocation's partial",
    ),
    (
        "invocation-dropped",
        r"(?<=\n)( *)(folded = (?:max\(folded, |folded \+ )\{\{ src \}\}\[lid \+ \{\{ s \}\}u\]\)?;)",
        r"\1{% if s > 1 %}\2{% endif %}",
        "tree: the final combine (stride 1) drops slot 1",
    ),
] + [
    (
        "race",
        r"(?<=\{\{ dst \}\}\[lid\] = folded;\n  \}\n)  workgroupBarrier\(\);",
        "  {% if s != " + str(s) + " %}workgroupBarrier();{% endif %}",
        f"tree: the barrier after the stride-{s} step removed (a read of the next step races with its write)",
    )
    for s in (1, 2, 4, 8, 16, 32, 64, 128)
]


#: Fault detection's operators (issue 38): an early return dropped or negated, a loop counter's bound `<` made `<=`
#: (and back), an initial value +1 and -1, a comparison inside a Jinja tag moved by one, and each `{% if %}` /
#: `{% elif %}` forced true and forced false.
_EARLY_RETURN = re.compile(r"(?m)^( *)if \((.+)\) \{ return; \}\n")
_LOOP_BOUND = re.compile(r"for \(var (\w+) = [^;]+; \1 (<=?) ")
_INITIAL = re.compile(r"\bvar \w+ = (\d+)u;")
_FOR_INIT = re.compile(r"for \(var \w+ = ([^;]+);")
_JINJA_TAG = re.compile(r"\{%-?\s*(if|elif|set|for)\b.*?-?%\}")
_JINJA_COMPARE = {" < ": " <= ", " <= ": " < ", " > ": " >= ", " >= ": " > "}
_BRANCH = re.compile(r"\{%(-?)\s*(if|elif)\s+(.+?)\s*(-?)%\}")


def _fault_mutants(text: str, add_any) -> None:
    """Add this round's operators' mutants of ``text`` through ``add(kind, start, end, new, description)``, none
    inside a Jinja comment."""
    comments = [m.span() for m in re.finditer(r"\{#.*?#\}", text, flags=re.S)]

    def add(kind, start, end, new, desc):
        if not any(a <= start < b for a, b in comments):
            add_any(kind, start, end, new, desc)

    for m in _EARLY_RETURN.finditer(text):
        add("early-return", m.start(), m.end(), "", f"the early return `if ({m[2]})` dropped")
        add(
            "early-return",
            m.start(),
            m.end(),
            f"{m[1]}if (!({m[2]})) {{ return; }}\n",
            f"the early return `if ({m[2]})` negated",
        )
    for m in _LOOP_BOUND.finditer(text):
        other = "<=" if m[2] == "<" else "<"
        add("loop-bound", m.start(2), m.end(2), other, f"loop counter {m[1]}: `{m[2]}` -> `{other}`")
    for m in _INITIAL.finditer(text):
        value = int(m[1])
        for new in (value + 1, value - 1) if value else (value + 1,):
            add("initial", m.start(1), m.end(1), str(new), f"initial value {value}u -> {new}u")
    for m in _FOR_INIT.finditer(text):
        add("initial", m.start(1), m.end(1), f"({m[1]}) + 1u", f"loop start `{m[1]}` + 1")
    for tag in _JINJA_TAG.finditer(text):
        for old, new in _JINJA_COMPARE.items():
            for m in re.finditer(re.escape(old), tag[0]):
                start = tag.start() + m.start()
                add(
                    "jinja-bound",
                    start,
                    start + len(old),
                    new,
                    f"`{old.strip()}` -> `{new.strip()}` in the template tag `{tag[0]}`",
                )
    for m in _BRANCH.finditer(text):
        for forced in ("true", "false"):
            add(
                "branch",
                m.start(),
                m.end(),
                f"{{%{m[1]} {m[2]} {forced} {m[4]}%}}",
                f"`{{% {m[2]} {m[3]} %}}` forced {forced}",
            )


def _code_lines(text: str):
    """(line number, start offset, line) of the WGSL lines: not Jinja tags, not comments."""
    offset, in_comment = 0, False
    for no, line in enumerate(text.splitlines(keepends=True), 1):
        stripped = line.strip()
        if stripped.startswith("{#"):
            in_comment = "#}" not in stripped
        elif in_comment:
            in_comment = "#}" not in stripped
        elif not stripped.startswith(("//", "{%", "{{")) and stripped:
            code = line.split("//", 1)[0]
            yield no, offset, code
        offset += len(line)


def template_mutants(short: str, op_id: str, name: str, text: str) -> list[Mutant]:
    out: list[Mutant] = []

    lines = text.splitlines()

    def add(kind, start, end, new, desc):
        old = text[start:end]
        line = text.count("\n", 0, start) + 1
        source = lines[line - 1].strip()
        if source not in desc:
            desc = f"{desc} (line {line}: `{source}`)"
        col = start - text.rfind(chr(10), 0, start) - 1
        mid = f"{short}/tpl/{kind}/L{line}:{col}:{' '.join(old.split())[:40]}->{' '.join(new.split())[:40]}"
        out.append(
            Mutant(mid, op_id, name, kind, desc, old, new, _apply=lambda t, s=start, e=end, n=new: t[:s] + n + t[e:])
        )

    for no, offset, code in _code_lines(text):
        for kind, pattern, new in _OPERATORS:
            for m in re.finditer(pattern, code):
                if kind == "bounds" and "<f32>" in code[max(0, m.start() - 4) : m.end() + 4]:
                    continue
                add(
                    kind,
                    offset + m.start(),
                    offset + m.end(),
                    new,
                    f"line {no}: `{m.group(0).strip()}` -> `{new.strip()}` in `{code.strip()}`",
                )
        for m in _FLOAT.finditer(code):
            value = float(m.group(1))
            if value == 0.0:
                continue
            nudged = repr(value * 1.001)
            add(
                "constant",
                offset + m.start(1),
                offset + m.end(1),
                nudged,
                f"line {no}: constant {m.group(1)} nudged by +0.1% to {nudged}",
            )
    for kind, pattern, new, desc in _SPECIALS:
        for m in re.finditer(pattern, text, flags=re.S):
            add(kind, m.start(), m.end(), new, desc)
    for kind, pattern, new, desc in _REDUCTION_SPECIALS:
        for m in re.finditer(pattern, text):
            add(kind, m.start(), m.end(), m.expand(new), desc)
    _fault_mutants(text, add)
    # erf and tanh swapped: both branch conditions exchanged
    a, b = text.find('approximate == "tanh"'), text.find('approximate == "erf"')
    if a >= 0 and b >= 0:
        swapped = (
            text.replace('approximate == "tanh"', "\0")
            .replace('approximate == "erf"', 'approximate == "tanh"')
            .replace("\0", 'approximate == "erf"')
        )
        out.append(
            Mutant(
                f"{short}/tpl/erf-tanh/swap",
                op_id,
                name,
                "erf-tanh",
                "the erf and tanh formulas swapped",
                'approximate == "tanh"',
                'approximate == "erf"',
                _apply=lambda t, s=swapped: s,
            )
        )
    seen, unique = set(), []
    for m in out:  # one mutant per change: an operator that makes the same edit as an earlier one adds nothing
        change = m._apply(text)
        if m.id not in seen and change not in seen:
            seen.update((m.id, change))
            unique.append(m)
    return unique


# -- manifest mutants ------------------------------------------------------------------------------
_EXPR_OPS = [
    (r" == ", " != "),
    (r" != ", " == "),
    (r" >= ", " > "),
    (r" <= ", " < "),
    (r" > ", " >= "),
    (r" < ", " <= "),
    (r" and ", " or "),
]
_INT = re.compile(r"(?<![\w.\"])(\d+)(?![\w.])")


def manifest_mutants(short: str, op_id: str, raw: dict) -> list[Mutant]:
    out: list[Mutant] = []

    def add(mid, kind, desc, fn, old="", new=""):
        def apply(text, fn=fn):
            data = json.loads(text)
            fn(data)
            return json.dumps(data, indent=2)

        out.append(Mutant(f"{short}/manifest/{mid}", op_id, "manifest.json", kind, desc, old, new, _apply=apply))

    def set_path(data, path, value):
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    def expr_mutations(path, expr, kind):
        for pattern, new in _EXPR_OPS:
            for m in re.finditer(pattern, expr):
                mutated = expr[: m.start()] + new + expr[m.end() :]
                add(
                    f"{'/'.join(map(str, path))}:{m.start()}:{m.group(0).strip()}->{new.strip()}",
                    kind,
                    f"{'/'.join(map(str, path))}: `{m.group(0).strip()}` -> `{new.strip()}` in `{expr}`",
                    lambda d, p=path, v=mutated: set_path(d, p, v),
                    expr,
                    mutated,
                )
        for m in _INT.finditer(expr):
            mutated = expr[: m.start()] + str(int(m.group(1)) + 1) + expr[m.end() :]
            add(
                f"{'/'.join(map(str, path))}:{m.start()}:{m.group(1)}->{int(m.group(1)) + 1}",
                "constant",
                f"{'/'.join(map(str, path))}: constant {m.group(1)} -> {int(m.group(1)) + 1} in `{expr}`",
                lambda d, p=path, v=mutated: set_path(d, p, v),
                expr,
                mutated,
            )

    for name, expr in raw.get("derive", {}).items():
        if isinstance(expr, str):
            expr_mutations(["derive", name], expr, "derive")
    variants = raw["variants"]
    for i, var in enumerate(variants):
        vid = var["id"]
        for j, pred in enumerate(var.get("when", [])):
            add(
                f"variants/{vid}/when/{j}:drop",
                "when-dropped",
                f"variant {vid}: predicate `{pred}` dropped",
                lambda d, i=i, j=j: d["variants"][i]["when"].pop(j),
                str(pred),
                "",
            )
            add(
                f"variants/{vid}/when/{j}:negate",
                "when-negated",
                f"variant {vid}: predicate `{pred}` negated",
                lambda d, i=i, j=j, p=pred: d["variants"][i]["when"].__setitem__(j, f"not ({p})"),
                str(pred),
                f"not ({pred})",
            )
            if isinstance(pred, str):
                expr_mutations(["variants", i, "when", j], pred, "when")
        for p_i, ps in enumerate(var.get("passes", [])):
            threads = ps.get("dispatch", {}).get("threads")
            if isinstance(threads, str):
                expr_mutations(["variants", i, "passes", p_i, "dispatch", "threads"], threads, "dispatch")
    order = sorted(range(len(variants)), key=lambda k: -variants[k]["priority"])
    for n, a in enumerate(order):
        for b in order[n + 1 :]:
            va, vb = variants[a], variants[b]

            def swap(d, a=a, b=b):
                d["variants"][a]["priority"], d["variants"][b]["priority"] = (
                    d["variants"][b]["priority"],
                    d["variants"][a]["priority"],
                )

            add(
                f"priority:{va['id']}<->{vb['id']}",
                "priority",
                f"priorities of {va['id']} ({va['priority']}) and {vb['id']} ({vb['priority']}) swapped",
                swap,
            )
            whens = {str(p) for p in va.get("when", [])}, {str(p) for p in vb.get("when", [])}
            if ("biasOk" in whens[0] and "noBiasOk" in whens[1]) or ("noBiasOk" in whens[0] and "biasOk" in whens[1]):
                out[-1].status = "equivalent"
                out[-1].equivalence = (
                    "the two variants cannot both accept a call: one requires `biasOk` (which "
                    "tests `present.bias`) and the other `noBiasOk` (`not present.bias`), so "
                    "their relative priority never decides a selection"
                )
    consts = raw.get("constants", {})
    if consts.get("approximate") in ('"tanh"', '"erf"'):
        other = '"erf"' if consts["approximate"] == '"tanh"' else '"tanh"'
        add(
            "constants/approximate",
            "erf-tanh",
            f"constant approximate {consts['approximate']} -> {other}",
            lambda d, o=other: d["constants"].__setitem__("approximate", o),
            consts["approximate"],
            other,
        )
    for key, new in (("scalar", '"f32"'), ("scalar", '"f16"'), ("usesF16", 'dtypes.T == "f32"')):
        if key in consts:
            add(
                f"constants/{key}={new}",
                "f16-f32",
                f"constant {key} `{consts[key]}` -> `{new}`",
                lambda d, k=key, n=new: d["constants"].__setitem__(k, n),
                consts[key],
                new,
            )
    return out


def package_mutants(package: Package) -> list[Mutant]:
    """Every mutant of a loaded package: its manifest's, then each shader template's (those the passes name, then
    the templates they import, e.g. the row kernels' ``row-reduction.wgsl.jinja``)."""
    short = package.manifest.name
    mutants = manifest_mutants(
        short, package.name, json.loads(read_confined(package.root, Path(package.manifest.file)))
    )
    shaders = list(package.manifest.shaders)
    shaders += sorted(p.name for p in package.root.glob("*.jinja") if p.name not in shaders)  # included templates
    for shader in shaders:
        mutants += template_mutants(short, package.name, shader, package.read_template(shader))
    return mutants


# -- template mutants that are never rendered -----------------------------------------------------------------
def _plans(package) -> list:
    """(plan, pass) of every accepted generated call, one per distinct template context."""
    planner, out, seen = Planner(package.manifest), [], set()
    for case in case_generator.generate(package):
        if not case.accepted:
            continue
        plan = planner.plan_case(case.call_args(), case.profile, case.tunables)
        for p in plan.passes:
            key = repr(sorted((k, repr(v)) for k, v in context(plan, p).items()))
            if key not in seen:
                seen.add(key)
                out.append((plan, p))
    return out


def mark_unrendered(package_dir: Path, mutants: list[Mutant]) -> None:
    """Template mutants whose shaders render byte-identically for every call the cases make are equivalent; so are
    those that render differently only into passes that dispatch nothing (empty tensors), which no runtime
    compiles or runs (``conformance.gpu.runtime`` and the JavaScript loader skip a pass of 0 workgroups)."""
    package = load_package(package_dir)
    env = template_environment(package)
    plans = _plans(package)
    running = [(plan, p, render(package, plan, p, env)) for plan, p in plans if not p.dispatch.empty]
    idle = [(plan, p, render(package, plan, p, env)) for plan, p in plans if p.dispatch.empty]
    with tempfile.TemporaryDirectory(prefix="mutant-render-") as tmp:
        for m in mutants:
            if m.file == "manifest.json" or m.status != "pending":
                continue
            root = m.materialize(package.root, Path(tmp) / m.slug)
            try:
                mutated = Package(root, package.manifest)
                mutant_env = template_environment(mutated)  # each template compiled once for its renders
                if not all(_renders_as(mutated, plan, p, want, mutant_env) for plan, p, want in running):
                    continue  # a pass that runs sees the change: the mutant is run
                changed = sum(not _renders_as(mutated, plan, p, want, mutant_env) for plan, p, want in idle)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            m.status = "equivalent"
            if not changed:
                m.equivalence = (
                    f"never rendered for this package: the shaders of every accepted call of the cases "
                    f"({len(plans)} distinct template contexts) render byte-identically (the mutated "
                    f"text lies in a template branch this package's constants never select)"
                )
            else:
                m.equivalence = (
                    f"idle for this package: it changes only the shaders of passes that dispatch nothing "
                    f"({changed} of the {len(idle)} template contexts of empty tensors' plans), which "
                    f"no runtime compiles or runs; every context that dispatches renders "
                    f"byte-identically"
                )


def _renders_as(package: Package, plan, pass_plan, want: str, env) -> bool:
    """Whether ``pass_plan`` renders to ``want`` from ``package`` (a render that raises does not)."""
    try:
        return render(package, plan, pass_plan, env) == want
    except Exception:  # noqa: BLE001 -- a mutant's broken template: it does not render the same
        return False
