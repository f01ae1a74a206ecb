"""``python -m conformance.mutate [PACKAGE...]``: the suite's fault-detection score.

Makes mutants of each package's shader template and manifest (operator swaps, constants nudged, bounds checks
off by one, the tail guard removed, bias dropped or indexed wrong, erf and tanh swapped, f16/f32 confusion,
variant priorities reordered, ``when`` predicates dropped or negated, derive rules perturbed), and runs the
conformance suite against each in a scratch copy of the package -- in parallel processes, each stopped at its
first failing case (``-x``).  The scratch copy carries the *original* package's ``test.json`` (see
``python -m conformance export``): the generated cases follow the mutated manifest, so a manifest mutant is
caught by the stored expectations of the published contract (variant, dispatch, outcome, values).

A mutant is *killed* (with the case that killed it) or *survives*.  A template mutant whose rendered shaders are
byte-identical for every call the cases make is *equivalent* by construction (the mutated text is never
rendered for this package); other equivalent mutants are argued in :data:`ARGUED_EQUIVALENT`.  The report
(JSON and Markdown) gives the kill rate over the non-equivalent mutants and lists every survivor.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[3]
TEST_KERNELS = REPO / "conformance" / "test_kernels.py"

#: Equivalent mutants that rendering cannot prove, each with its argument: (package short name, id pattern) -> why.
ARGUED_EQUIVALENT: dict[tuple[str, str], str] = {
    # Patterns match "<id> <description>"; a pattern naming a template line stops matching when the template
    # changes, and the mutant then shows as surviving (the safe direction) until it is argued again.
    ("FastGelu", r"FastGelu/tpl/(bias-dropped|bias-index|arith)/.*`y\[i\] = \{\{ scalar \}\}\(gelu1\(f32\(x\[i\]\) \+ f32\(bias\[i % HIDDEN\]\)\)\);`.*"):
        "the plain scalar path (`vec4 == false, vec4Tail == false`) with a bias is variant scalar_bias, which the "
        "manifest selects only when numel(X) == 0 (vec4_tail_bias, priority 20, takes every other biasOk call): "
        "the shader then runs no element, so how it adds the bias cannot be observed",
    ("FastGelu", r"FastGelu/tpl/(bounds|tail-guard)/L136:.*"):
        "line 136 is the plain scalar path's guard; FastGelu selects its scalar variants (scalar_bias, "
        "scalar_no_bias) only when numel(X) == 0, where no invocation runs",
    ("FastGelu", r"FastGelu/tpl/arith/L80:33:.*"):
        "the mutated `+` adds nwg.y * wid.z, which is 0 unless the dispatch splits over z; FastGelu's dispatchFits "
        "keeps every vec4/vec4Tail dispatch within maxComputeWorkgroupsPerDimension^2 workgroups (no z split), and "
        "its scalar variants run no invocation (numel(X) == 0)",
    ("FastGelu", r"FastGelu/tpl/(bounds/L\d+:\d+:>=->>|tail-guard/L\d+:\d+:if \(i >= stride\) \{ return; \}->) "
                 r".*`if \(i >= stride\) \{ return; \}`.*"):
        "the mutant lets invocations i >= stride through: each fails the full-quad test (i + 3 * stride >= "
        "4 * stride >= count) and its tail loop visits only elements e < count that the invocation e % stride "
        "also writes, from the same input with the same f32 math: the outputs are unchanged",
    ("FastGelu", r"FastGelu/tpl/arith/L\d+:\d+:\+->- .*`if \(i \+ 3u \* stride < params\.count\) \{`.*"):
        "`i - 3u * stride` wraps around in u32 for every i < stride, so the full-quad test fails and every "
        "invocation takes the bounds-checked loop, which computes each element with the same gelu in f32 as the "
        "quad path: only the speed changes",
    ("*", r".*/when/\d+:drop variant \S+: predicate `true` dropped"):
        "dropping the literal predicate `true` leaves the variant's conjunction unchanged",
    ("FastGelu", r"FastGelu/manifest/derive/vec4Ok:18:0->1 .*"):
        "`numel(X) > 1` differs from `numel(X) > 0` only at numel(X) == 1, where the next conjunct "
        "`numel(X) % 4 == 0` is false anyway",
    ("Gelu", r"Gelu/manifest/variants/0/when/2:\d+:0->1 .*"):
        "in vec4's `when`, `numel(X) > 1` differs from `numel(X) > 0` only at numel(X) == 1, where the next "
        "predicate `numel(X) % 4 == 0` is false anyway",
    ("Gelu", r"Gelu/manifest/variants/\w+/when/\d+:drop variant \w+: predicate `numel\(shapes\.X\) == numel\(shapes\.Y\)` dropped"):
        "the output Y's shape is `shapes.X`, so `numel(shapes.X) == numel(shapes.Y)` is identically true",
    ("*", r".*/tpl/constant/L\d+:\d+:10\.0->\S+ .*`const CLAMP: f32 = 10\.0;`.*"):
        "moving the clamp from 10 to 10.01 changes outputs only for 10 <= |x| < 10.01: on the positive side both "
        "give x to within 1e-22 relative (1 - Phi(10) < 8e-24; tanh form exp(-87)), on the negative side 0 versus "
        "a true value of magnitude below 8e-23: both far inside every tolerance (f32 atol >= 2.4e-6)",
    ("*", r".*/tpl/bounds/L\d+:\d+:<-><= .*x < \{\{ T \}\}\(-CLAMP\).*"):
        "`x <= -CLAMP` differs from `x < -CLAMP` only at x == -10 exactly, where the output becomes 0 instead of "
        "-10 * Phi(-10) (|.| < 8e-23; tanh form -10 * exp(-87)): inside every tolerance's atol",
    ("Gelu", r"Gelu/tpl/(constant/L\d+:\d+:4\.6->4\.6045\d* .*`(let xf = clamp\(x, |return select\(x / ).*"
             r"|bounds/L\d+:\d+:<-><= .*x < \{\{ T \}\}\(-4\.6\).*"
             r"|constant/L\d+:\d+:(0\.104823585|0\.00016709164)->\S+ .*"
             r"|arith/L\d+:52:\+->- .*`\+ s \* \(5\.28762368e-07 \+ s \* \(-1\.17219439e-08 \+ s \* 1\.10743086e-10\).*)"):
        "the f16 erf path's edge (4.6 nudged by 0.1%, `<` for `<=` at -4.6), a 0.1% nudge of its x^2 or x^6 "
        "coefficient, or the sign of its x^14 term: evaluated as the template does (f32, rounded to f16) on every "
        "one of the 63,488 finite f16 inputs, each mutant's worst error stays 0.457 x allowed, the shipped "
        "formula's own worst (tests/runtime/test_f16_exhaustive.py checks this); a conforming kernel, not a fault",
    ("FastGelu", r"FastGelu/manifest/derive/packedF16Ok:40:0->1 .*"):
        "`numel(X) > 1` differs from `numel(X) > 0` only at numel(X) == 1, where the next conjunct "
        "`numel(X) % 8 == 0` is false anyway",
    ("Gelu", r"Gelu/manifest/variants/2/when/3:\d+:0->1 .*`numel\(shapes\.X\) > 0`.*"):
        "(the packed-f16 proposal's vec8_f16) `numel(X) > 1` differs from `numel(X) > 0` only at numel(X) == 1, "
        "where the next predicate `numel(X) % 8 == 0` is false anyway",
    ("Gelu", r"Gelu/tpl/bounds/L\d+:\d+:>->>= .*xc > \{\{ T \}\}\(0\.0\).*"):
        "the branch differs only at xc == 0, i.e. x == +-0, where the output x * p is +-0 whichever p is chosen "
        "(p is finite: 0.5 to within the fit's error)",
}


@dataclass
class Mutant:
    id: str
    package: str          # op id
    file: str             # the mutated file, relative to the package root
    kind: str
    description: str
    old: str = ""
    new: str = ""
    status: str = "pending"    # killed | survived | equivalent | error
    killed_by: str | None = None
    detail: str = ""
    seconds: float = 0.0
    equivalence: str | None = None
    _apply: Callable | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("_apply", None)
        return d


# -- template mutants ------------------------------------------------------------------------------
_OPERATORS = [("arith", r"(?<=[\w\)\]]) \+ (?=[\w\(\-])", " - "), ("arith", r"(?<=[\w\)\]]) - (?=[\w\(])", " + "),
              ("arith", r"(?<=[\w\)\]]) \* (?=[\w\(\-])", " / "), ("arith", r"(?<=[\w\)\]]) / (?=[\w\(])", " * "),
              ("bounds", r" >= ", " > "), ("bounds", r" < ", " <= "), ("bounds", r" > ", " >= "),
              ("bounds", r" <= ", " < ")]
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.])")


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
        out.append(Mutant(mid, op_id, name, kind, desc, old, new,
                          _apply=lambda t, s=start, e=end, n=new: t[:s] + n + t[e:]))

    for no, offset, code in _code_lines(text):
        for kind, pattern, new in _OPERATORS:
            for m in re.finditer(pattern, code):
                if kind == "bounds" and "<f32>" in code[max(0, m.start() - 4):m.end() + 4]:
                    continue
                add(kind, offset + m.start(), offset + m.end(), new,
                    f"line {no}: `{m.group(0).strip()}` -> `{new.strip()}` in `{code.strip()}`")
        for m in _FLOAT.finditer(code):
            value = float(m.group(1))
            if value == 0.0:
                continue
            nudged = repr(value * 1.001)
            add("constant", offset + m.start(1), offset + m.end(1), nudged,
                f"line {no}: constant {m.group(1)} nudged by +0.1% to {nudged}")
    specials = [
        ("tail-guard", r"if \(i \+ 3u \* stride < params\.count\)", "if (true)", "the vec4Tail full-quad guard removed"),
        ("tail-guard", r"  if \(i >= stride\) \{ return; \}\n", "", "the vec4Tail early return removed"),
        ("tail-guard", r"  if \(i >= params\.count\) \{ return; \}\n", "", "an `i >= count` guard removed"),
        ("tail-guard", r"e < params\.count; e \+= stride", "e < params.count + stride; e += stride",
         "the tail loop runs past count"),
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
        ("f16-f32", r'return select\(x \* p, \{\{ T \}\}\(0\.0\), x < \{\{ T \}\}\(-CLAMP\)\);',
         "return select(x * p, {{ T }}(0.0), x < {{ T }}(-CLAMP)) * {{ T }}(1.0009765625);",
         "result scaled by one f16 ULP (1 + 2**-10)"),
        ("clamp", r"return select\(x \* p, \{\{ T \}\}\(0\.0\), x < \{\{ T \}\}\(-CLAMP\)\);",
         "return x * p;", "the negative-tail cut to 0 removed"),
    ]
    for kind, pattern, new, desc in specials:
        for m in re.finditer(pattern, text, flags=re.S):
            add(kind, m.start(), m.end(), new, desc)
    # erf and tanh swapped: both branch conditions exchanged
    a, b = text.find('approximate == "tanh"'), text.find('approximate == "erf"')
    if a >= 0 and b >= 0:
        swapped = (text.replace('approximate == "tanh"', "\0").replace('approximate == "erf"', 'approximate == "tanh"')
                   .replace("\0", 'approximate == "erf"'))
        out.append(Mutant(f"{short}/tpl/erf-tanh/swap", op_id, name, "erf-tanh", "the erf and tanh formulas swapped",
                          'approximate == "tanh"', 'approximate == "erf"', _apply=lambda t, s=swapped: s))
    seen, unique = set(), []
    for m in out:
        if m.id not in seen:
            seen.add(m.id)
            unique.append(m)
    return unique


# -- manifest mutants ------------------------------------------------------------------------------
_EXPR_OPS = [(r" == ", " != "), (r" != ", " == "), (r" >= ", " > "), (r" <= ", " < "), (r" > ", " >= "),
             (r" < ", " <= "), (r" and ", " or ")]
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
                mutated = expr[:m.start()] + new + expr[m.end():]
                add(f"{'/'.join(map(str, path))}:{m.start()}:{m.group(0).strip()}->{new.strip()}", kind,
                    f"{'/'.join(map(str, path))}: `{m.group(0).strip()}` -> `{new.strip()}` in `{expr}`",
                    lambda d, p=path, v=mutated: set_path(d, p, v), expr, mutated)
        for m in _INT.finditer(expr):
            mutated = expr[:m.start()] + str(int(m.group(1)) + 1) + expr[m.end():]
            add(f"{'/'.join(map(str, path))}:{m.start()}:{m.group(1)}->{int(m.group(1)) + 1}", "constant",
                f"{'/'.join(map(str, path))}: constant {m.group(1)} -> {int(m.group(1)) + 1} in `{expr}`",
                lambda d, p=path, v=mutated: set_path(d, p, v), expr, mutated)

    for name, expr in raw.get("derive", {}).items():
        if isinstance(expr, str):
            expr_mutations(["derive", name], expr, "derive")
    variants = raw["variants"]
    for i, var in enumerate(variants):
        vid = var["id"]
        for j, pred in enumerate(var.get("when", [])):
            add(f"variants/{vid}/when/{j}:drop", "when-dropped", f"variant {vid}: predicate `{pred}` dropped",
                lambda d, i=i, j=j: d["variants"][i]["when"].pop(j), str(pred), "")
            add(f"variants/{vid}/when/{j}:negate", "when-negated", f"variant {vid}: predicate `{pred}` negated",
                lambda d, i=i, j=j, p=pred: d["variants"][i]["when"].__setitem__(j, f"not ({p})"), str(pred),
                f"not ({pred})")
            if isinstance(pred, str):
                expr_mutations(["variants", i, "when", j], pred, "when")
        for p_i, ps in enumerate(var.get("passes", [])):
            threads = ps.get("dispatch", {}).get("threads")
            if isinstance(threads, str):
                expr_mutations(["variants", i, "passes", p_i, "dispatch", "threads"], threads, "dispatch")
    order = sorted(range(len(variants)), key=lambda k: -variants[k]["priority"])
    for n, a in enumerate(order):
      for b in order[n + 1:]:
        va, vb = variants[a], variants[b]

        def swap(d, a=a, b=b):
            d["variants"][a]["priority"], d["variants"][b]["priority"] = \
                d["variants"][b]["priority"], d["variants"][a]["priority"]
        add(f"priority:{va['id']}<->{vb['id']}", "priority", f"priorities of {va['id']} ({va['priority']}) and "
            f"{vb['id']} ({vb['priority']}) swapped", swap)
        whens = {str(p) for p in va.get("when", [])}, {str(p) for p in vb.get("when", [])}
        if ("biasOk" in whens[0] and "noBiasOk" in whens[1]) or ("noBiasOk" in whens[0] and "biasOk" in whens[1]):
            out[-1].status = "equivalent"
            out[-1].equivalence = ("the two variants cannot both accept a call: one requires `biasOk` (which tests "
                                   "`present.bias`) and the other `noBiasOk` (`not present.bias`), so their "
                                   "relative priority never decides a selection")
    consts = raw.get("constants", {})
    if consts.get("approximate") in ('"tanh"', '"erf"'):
        other = '"erf"' if consts["approximate"] == '"tanh"' else '"tanh"'
        add("constants/approximate", "erf-tanh", f"constant approximate {consts['approximate']} -> {other}",
            lambda d, o=other: d["constants"].__setitem__("approximate", o), consts["approximate"], other)
    for key, new in (("scalar", '"f32"'), ("scalar", '"f16"'), ("usesF16", 'dtypes.T == "f32"')):
        if key in consts:
            add(f"constants/{key}={new}", "f16-f32", f"constant {key} `{consts[key]}` -> `{new}`",
                lambda d, k=key, n=new: d["constants"].__setitem__(k, n), consts[key], new)
    return out


# -- equivalence ------------------------------------------------------------------------------------
def _plans(package) -> list:
    """(plan, pass) of every accepted generated call, one per distinct template context."""
    import cases as case_generator
    from conformance.engine.call import make_call
    from conformance.engine.planner import Planner
    from conformance.gpu.render import context
    planner, out, seen = Planner(package.manifest), [], set()
    for case in case_generator.generate(package):
        if not case.accepted:
            continue
        plan = planner.plan(make_call(package.manifest, dict(case.inputs), case.profile, case.tunables or None))
        for p in plan.passes:
            key = repr(sorted((k, repr(v)) for k, v in context(plan, p).items()))
            if key not in seen:
                seen.add(key)
                out.append((plan, p))
    return out


def mark_unrendered(package_dir: Path, mutants: list[Mutant]) -> None:
    """Template mutants whose shaders render byte-identically for every call the cases make are equivalent."""
    from conformance.engine.package import Package, load_package
    from conformance.gpu.render import render
    package = load_package(package_dir)
    plans = _plans(package)
    original = [render(package, plan, p) for plan, p in plans]
    with tempfile.TemporaryDirectory(prefix="mutant-render-") as tmp:
        for m in mutants:
            if m.file == "manifest.json" or m.status != "pending":
                continue
            root = Path(tmp) / re.sub(r"[^A-Za-z0-9_.-]+", "_", m.id)[:150]
            shutil.copytree(package.root, root)
            path = root / m.file
            path.write_text(m._apply(path.read_text()))
            mutated_pkg = Package(root, package.manifest)
            try:
                same = all(render(mutated_pkg, plan, p) == want for (plan, p), want in zip(plans, original))
            except Exception:
                continue
            finally:
                shutil.rmtree(root, ignore_errors=True)
            if same:
                m.status = "equivalent"
                m.equivalence = (f"never rendered for this package: the shaders of every accepted call of the cases "
                                 f"({len(plans)} distinct template contexts) render byte-identically (the mutated "
                                 f"text lies in a template branch this package's constants never select)")


def argue(short: str, mutants: list[Mutant]) -> None:
    for m in mutants:
        if m.status != "pending":
            continue
        for (pkg, pattern), why in ARGUED_EQUIVALENT.items():
            if pkg in (short, "*") and re.fullmatch(pattern, f"{m.id} {m.description}", flags=re.S):
                m.status, m.equivalence = "equivalent", why
                break


# -- running ----------------------------------------------------------------------------------------
def run_suite(specs: Path, report: Path, *, stop_first: bool = True, timeout: float = 600,
              extra: list[str] | None = None) -> tuple[int, dict | None, str]:
    cmd = [sys.executable, "-m", "pytest", str(TEST_KERNELS), f"--specs={specs}", "--device=vulkan", "-q",
           "-p", "no:cacheprovider", f"--conformance-report={report}", *(["-x"] if stop_first else []),
           *(extra or [])]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return -1, None, f"timed out after {timeout:.0f} s"
    data = json.loads(report.read_text()) if report.is_file() else None
    return proc.returncode, data, (proc.stdout + proc.stderr)[-3000:]


def run_mutant(m: Mutant, package_dir: Path, test_json: Path, scratch: Path, timeout: float) -> Mutant:
    work = scratch / re.sub(r"[^A-Za-z0-9_.-]+", "_", m.id)[:150]
    pkg = work / package_dir.name
    shutil.copytree(package_dir, pkg)
    shutil.copy(test_json, pkg / "test.json")
    path = pkg / m.file
    path.write_text(m._apply(path.read_text()))
    start = time.monotonic()
    rc, data, tail = run_suite(pkg, work / "report.json", timeout=timeout, extra=["-m", "test_json"])
    m.seconds = round(time.monotonic() - start, 2)
    if rc == 0:
        m.status = "survived"
    elif data is not None:
        failed = [c for c in data["cases"] if c["status"] in ("failed", "xpassed")]
        if failed:
            m.status, m.killed_by = "killed", failed[0]["id"]
            m.detail = " ".join((failed[0].get("detail") or "").split())[:400]
        else:
            m.status, m.killed_by, m.detail = "killed", "(the run failed)", tail[-400:]
    elif rc == -1:
        m.status, m.killed_by, m.detail = "killed", "(timeout)", tail
    else:
        m.status, m.killed_by, m.detail = "killed", "(the run failed without a report)", tail[-400:]
        if "manifest" in tail and "cannot load" in tail:
            m.killed_by = f"{package_dir.name}/manifest"
    shutil.rmtree(work, ignore_errors=True)
    return m


# -- in-process runs: the plugin's own CaseChecker over the stored cases, one device per worker process ------
_WORKER: dict = {}


def _worker_check(mid: str, mutant_dir: str, original_dir: str, test_json: str) -> tuple[str, str, str | None, str, float]:
    """(id, status, killing case, detail, seconds): the stored cases in order, stopping at the first failure."""
    from cases.data import make_inputs
    from reference import compare, reference_for
    from conformance.certify.checker import CaseChecker, CaseSkipped, verdict_for
    from conformance.gpu.device import get_device
    from conformance.errors import ConformanceError
    from conformance.tools.export import load_test_cases
    from conformance.engine.package import load_package
    start = time.monotonic()
    if "checker" not in _WORKER:
        _WORKER["checker"] = CaseChecker(get_device("vulkan"), make_inputs, reference_for, compare)
    checker = _WORKER["checker"]
    key = (original_dir, test_json)
    if key not in _WORKER:
        _WORKER[key] = load_test_cases(load_package(Path(original_dir)), Path(test_json))
    try:
        package = load_package(Path(mutant_dir))
    except ConformanceError as err:
        return mid, "killed", f"{Path(original_dir).name}/manifest", " ".join(str(err).split())[:400], \
            time.monotonic() - start
    try:
        for case in _WORKER[key]:
            try:
                checker.check(case, package, verdict_for(case))
            except CaseSkipped:
                continue
            except AssertionError as err:
                return mid, "killed", case.id, " ".join(str(err).split())[:400], time.monotonic() - start
            except Exception as err:  # the plugin reports any other error of a case as its failure
                return mid, "killed", case.id, f"{type(err).__name__}: " + " ".join(str(err).split())[:400], \
                    time.monotonic() - start
        return mid, "survived", None, "", time.monotonic() - start
    finally:
        checker._kernels.pop(str(package.root), None)
        checker.device.pipelines.clear()


def mutate_packages(package_dirs: list[Path], *, jobs: int = 2, only: str | None = None, out: Path | None = None,
                    timeout: float = 300, limit: int | None = None, log=None, via_pytest: bool = False) -> dict:
    log = log or (lambda text: print(text, flush=True))
    from conformance.tools.export import build_test
    from conformance.engine.package import load_package
    scratch = Path(tempfile.mkdtemp(prefix="conformance-mutate-"))
    started = time.monotonic()
    all_mutants: list[Mutant] = []
    baselines = {}
    tasks = []
    for directory in package_dirs:
        package = load_package(directory)
        root = package.root
        short = package.manifest.name
        test_json = scratch / f"{short}.test.json"
        # every non-heavy case of the original package, with its expected outcome and outputs
        test_json.write_text(json.dumps(build_test(package, max_elements=1 << 20)))
        raw = json.loads((root / "manifest.json").read_text())
        mutants = manifest_mutants(short, package.name, raw)
        for shader in package.manifest.shaders:
            mutants += template_mutants(short, package.name, shader, (root / shader).read_text())
        if only:
            mutants = [m for m in mutants if re.search(only, m.id)]
        if limit:
            mutants = mutants[:limit]
        mark_unrendered(root, mutants)
        argue(short, mutants)
        # the unmutated package must pass, or no kill means anything
        base = scratch / f"baseline-{short}"
        shutil.copytree(root, base / root.name)
        shutil.copy(test_json, base / root.name / "test.json")
        rc, data, tail = run_suite(base / root.name, base / "report.json", timeout=timeout, stop_first=False)
        baselines[package.name] = {"passed": rc == 0, "totals": (data or {}).get("totals"),
                                   "test_json_cases": sum(1 for c in (data or {}).get("cases", [])
                                                          if c["id"].startswith("test.json/"))}
        if rc != 0:
            raise SystemExit(f"the unmutated package {root} fails the suite; fix it first:\n{tail}")
        log(f"{package.name}: {len(mutants)} mutants "
            f"({sum(m.status == 'equivalent' for m in mutants)} equivalent), baseline passes")
        all_mutants += mutants
        tasks += [(m, root, test_json) for m in mutants if m.status == "pending"]
    if via_pytest:
        with futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            pending = {pool.submit(run_mutant, m, root, tj, scratch, timeout): m for m, root, tj in tasks}
            for done, fut in enumerate(futures.as_completed(pending), 1):
                m = fut.result()
                log(f"[{done}/{len(tasks)}] {m.status:8} {m.id}" + (f"  <- {m.killed_by}" if m.killed_by else "")
                    + f" ({m.seconds:.1f}s)")
    else:
        import multiprocessing
        by_id, jobs_args = {}, []
        for m, root, tj in tasks:
            mdir = scratch / "mutants" / re.sub(r"[^A-Za-z0-9_.-]+", "_", m.id)[:150] / root.name
            shutil.copytree(root, mdir)
            path = mdir / m.file
            path.write_text(m._apply(path.read_text()))
            by_id[m.id] = m
            jobs_args.append((m.id, str(mdir), str(root), str(tj)))
        ctx = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            pending = [pool.submit(_worker_check, *a) for a in jobs_args]
            for done, fut in enumerate(futures.as_completed(pending), 1):
                mid, status, killer, detail, seconds = fut.result()
                m = by_id[mid]
                m.status, m.killed_by, m.detail, m.seconds = status, killer, detail, round(seconds, 2)
                log(f"[{done}/{len(tasks)}] {m.status:8} {m.id}" + (f"  <- {m.killed_by}" if m.killed_by else "")
                    + f" ({m.seconds:.1f}s)")
    shutil.rmtree(scratch, ignore_errors=True)
    result = summarize(all_mutants, baselines, time.monotonic() - started, jobs)
    if out:
        write(result, out)
    return result


def summarize(mutants: list[Mutant], baselines: dict, seconds: float, jobs: int) -> dict:
    per_pkg = {}
    for pkg in dict.fromkeys(m.package for m in mutants):
        ms = [m for m in mutants if m.package == pkg]
        killed = sum(m.status == "killed" for m in ms)
        survived = sum(m.status == "survived" for m in ms)
        per_pkg[pkg] = {"mutants": len(ms), "killed": killed, "survived": survived,
                        "equivalent": sum(m.status == "equivalent" for m in ms),
                        "kill_rate": killed / (killed + survived) if killed + survived else 1.0}
    killed = sum(v["killed"] for v in per_pkg.values())
    survived = sum(v["survived"] for v in per_pkg.values())
    return {"kill_rate": killed / (killed + survived) if killed + survived else 1.0,
            "killed": killed, "survived": survived, "equivalent": sum(v["equivalent"] for v in per_pkg.values()),
            "seconds": round(seconds, 1), "jobs": jobs, "packages": per_pkg, "baselines": baselines,
            "mutants": [m.as_dict() for m in mutants]}


def markdown(result: dict) -> str:
    lines = ["# Mutation score", "",
             f"Kill rate **{100 * result['kill_rate']:.1f}%** over the non-equivalent mutants: {result['killed']} "
             f"killed, {result['survived']} surviving, {result['equivalent']} equivalent (argued below); "
             f"{result['seconds']:.0f} s with {result['jobs']} runs at a time, each stopped at its first failing case.",
             "", "| package | mutants | killed | surviving | equivalent | kill rate |", "| --- | --- | --- | --- | --- | --- |"]
    for pkg, v in result["packages"].items():
        lines.append(f"| {pkg} | {v['mutants']} | {v['killed']} | {v['survived']} | {v['equivalent']} | "
                     f"{100 * v['kill_rate']:.1f}% |")
    survivors = [m for m in result["mutants"] if m["status"] == "survived"]
    lines += ["", "## Surviving mutants", ""]
    lines += [f"- `{m['id']}`: {m['description']}" for m in survivors] or ["None."]
    lines += ["", "## Equivalent mutants (argued)", ""]
    lines += [f"- `{m['id']}`: {m['description']}. **Why equivalent:** {m['equivalence']}"
              for m in result["mutants"] if m["status"] == "equivalent"] or ["None."]
    lines += ["", "## Killed mutants", "", "| mutant | what | killed by |", "| --- | --- | --- |"]
    lines += [f"| `{m['id']}` | {m['description'].replace('|', '/')} | `{m['killed_by']}` |"
              for m in result["mutants"] if m["status"] == "killed"]
    return "\n".join(lines) + "\n"


def write(result: dict, out: Path) -> tuple[Path, Path]:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path = out if out.suffix == ".json" else out.with_suffix(".json")
    json_path.write_text(json.dumps(result, indent=1) + "\n")
    md = json_path.with_suffix(".md")
    md.write_text(markdown(result))
    return json_path, md


def main(argv=None) -> int:
    from conformance.engine.package import REPO_SPECS, find_package_dirs
    p = argparse.ArgumentParser(prog="python -m conformance.mutate", description=__doc__.split("\n\n")[0])
    p.add_argument("packages", nargs="*", help="package directories, or directories of packages (default: specs/)")
    p.add_argument("--jobs", "-j", type=int, default=2, help="mutants run at a time (default 2)")
    p.add_argument("--only", default=None, help="only mutants whose id matches this regular expression")
    p.add_argument("--limit", type=int, default=None, help="at most this many mutants per package")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--out", default="mutation-report.json", help="JSON report (Markdown beside it)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per mutant run (with --pytest)")
    p.add_argument("--pytest", action="store_true",
                   help="run each mutant as its own `pytest conformance/ -x -m test_json` process (slower: every "
                        "run pays pytest's start-up and case generation) instead of the default worker processes, "
                        "which run the plugin's CaseChecker over the same stored cases, one device per worker")
    args = p.parse_args(argv)
    dirs = [d for ref in (args.packages or [str(REPO_SPECS)]) for d in find_package_dirs(Path(ref))]
    if not dirs:
        print("error: no kernel package found", file=sys.stderr)
        return 2
    if args.list:
        from conformance.engine.package import load_package
        for d in dirs:
            pkg = load_package(d)
            ms = manifest_mutants(pkg.manifest.name, pkg.name, json.loads((pkg.root / "manifest.json").read_text()))
            for s in pkg.manifest.shaders:
                ms += template_mutants(pkg.manifest.name, pkg.name, s, (pkg.root / s).read_text())
            for m in ms:
                if not args.only or re.search(args.only, m.id):
                    print(f"{m.id}\t{m.description}")
        return 0
    result = mutate_packages(dirs, jobs=args.jobs, only=args.only, out=Path(args.out), timeout=args.timeout,
                             limit=args.limit, via_pytest=args.pytest)
    print(f"kill rate {100 * result['kill_rate']:.1f}%: {result['killed']} killed, {result['survived']} surviving, "
          f"{result['equivalent']} equivalent; report {args.out} and {Path(args.out).with_suffix('.md')}")
    return 0 if result["survived"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
