"""Static checks of kernel packages, for CI: ``python -m conformance lint [DIR]``.

Every check reuses the engine (manifest loading, planning, rendering, compiling) and the case generator
(the calls each variant is checked with); the lint only decides what to report. A finding is one
``path:json-pointer: message`` line.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import cases
from cases import workers
from cases.weakness import dead_branch, idle_branch
from conformance.engine.dtypes import WGSL_DTYPE
from conformance.engine.package import REPO_SPECS, Package, duplicate_names, find_package_dirs, load_package
from conformance.engine.planner import Planner
from conformance.errors import ConformanceError, ExpressionError, KernelRuntimeError, ManifestError, TemplateError
from conformance.files import MAX_PACKAGE_FILE, read_confined
from conformance.ops import missing_record_note
from conformance.shader.branches import pooled, template_coverage
from conformance.shader.render import render, template_environment
from conformance.tools import portable
from conformance.tools.jsjinja import EngineUnavailable
from conformance.tools.loader_plans import compare_package, open_planner

#: ``@group(0) @binding(1) var<storage, read> x: array<f32>;`` -> group, index, address space, name, type.
DECLARATION = re.compile(
    r"@group\(\s*(\d+)\s*\)\s*@binding\(\s*(\d+)\s*\)\s*"
    r"var\s*(?:<([^>]*)>)?\s*(\w+)\s*:\s*([^;]+);"
)
COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


@dataclass(frozen=True)
class Finding:
    path: str
    pointer: str
    message: str

    def __str__(self) -> str:
        first, *rest = self.message.strip().splitlines() or [""]
        return "\n".join([f"{_shown(self.path)}:{self.pointer or '/'}: {first}"] + ["    " + r for r in rest])


def _shown(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


# -- the engine's schema and cross-reference checks ---------------------------------------------------
def load(directory: Path) -> tuple[Package | None, list[Finding]]:
    """The package, or every problem the engine found in it."""
    try:
        return load_package(directory), []
    except ManifestError as err:
        problems = getattr(err, "problems", None) or [err]
        return None, [Finding(p.file or str(directory), p.pointer, p.detail) for p in problems]
    except ConformanceError as err:
        return None, [Finding(str(directory), "", str(err))]
    except Exception as err:  # noqa: BLE001 -- any failure of one package is that package's finding
        return None, [Finding(str(directory), "", f"cannot load the package: {type(err).__name__}: {err}")]


# -- reachability -----------------------------------------------------------------------------------
def unreachable(package: Package, generated) -> list[Finding]:
    """Variants no generated call selects (the case space is built to reach every reachable variant, as
    ``cases.coverage`` reports), with the higher-priority variants that took the calls they accept."""
    m = package.manifest
    selected = {c.expect["variant"] for c in generated if c.accepted}
    missing = [v.id for v in m.variants if v.id not in selected]
    if not missing:
        return []
    planner, out = Planner(m), []
    for vid in missing:
        variant, takers, failing = m.variant(vid), set(), {}
        for case in generated:
            try:
                scope = planner.scope(planner.call_for(case.call_args(), case.profile, case.tunables))
            except ConformanceError:
                continue
            if not _holds(variant, scope):
                continue
            if case.accepted:
                takers.add(case.expect["variant"])
            elif _selects(m, variant, scope):  # its `when` chose it, then planning it failed: name the cause
                failing.setdefault(_plan_failure(planner, case), case.id)
        if failing:
            cause, first = next(iter(failing.items()))
            why = f"every call its `when` selects fails in planning ({cause}; e.g. case {first})"
        elif takers:
            why = (
                f"shadowed: every generated call its `when` accepts is taken by higher-priority "
                f"{', '.join(sorted(takers))}"
            )
        else:
            why = "its `when` predicates hold for no generated call"
        out.append(
            Finding(
                m.file, variant.pointer, f"variant {vid!r} (priority {variant.priority}) is selected by no call: {why}"
            )
        )
    return out


def _selects(m, variant, scope) -> bool:
    """Whether ``variant`` is the first variant (by priority) whose `when` holds in ``scope``."""
    return next((v for v in m.variants if _holds(v, scope)), None) is variant


def _plan_failure(planner: Planner, case) -> str:
    """The error planning ``case`` raises, first line: e.g. a binding whose length or element type fails."""
    try:
        planner.plan_case(case.call_args(), case.profile, case.tunables)
    except ConformanceError as err:
        return str(err).splitlines()[0]
    return "no error when planned again"


def _holds(variant, scope) -> bool:
    try:
        return all(variant.evaluator.evaluate(e.tree, scope, e.pointer) is True for e in variant.when)
    except ConformanceError:
        return False


# -- expressions that fail ------------------------------------------------------------------------
def failing_expressions(package: Package, generated) -> list[Finding]:
    """Expressions (derive, when, constants, bindings, dispatch) that raise for a generated call: a defect of the
    manifest, never a rejection; one finding per expression and message, naming the first such call."""
    return [
        Finding(
            package.manifest.file,
            f.pointer,
            f"fails to evaluate for {f.count} generated call(s), e.g. case {f.first}: {f.message}",
        )
        for f in cases.planning_failures(generated)
    ]


# -- render, compile, bindings ----------------------------------------------------------------------
def representatives(generated) -> dict[tuple[str, tuple[str, ...]], object]:
    """One accepted case per (variant, dtypes), in generation order: baseline profile, default tunables,
    light and non-empty first."""
    best = {}
    for case in generated:
        if case.accepted:
            key = (case.expect["variant"], tuple(dict.fromkeys(a[1] for a in case.inputs.values() if a)))
            rank = (
                case.profile.name != "baseline",
                bool(case.tunables),
                case.heavy,
                all(p["threads"] == 0 for p in case.expect["passes"]),
            )
            if key not in best or rank < best[key][0]:
                best[key] = (rank, case)
    return {k: c for k, (_, c) in best.items()}


def declarations(wgsl: str) -> dict[tuple[int, int], tuple[str, str, str]]:
    """(group, binding) -> (address space, name, type), whitespace-normalised."""
    text = COMMENTS.sub("", wgsl)
    return {
        (int(g), int(i)): (re.sub(r"\s+", "", space or ""), name, re.sub(r"\s+", "", type_))
        for g, i, space, name, type_ in DECLARATION.findall(text)
    }


def binding_problems(pass_plan, wgsl: str) -> list[str]:
    """The plan's bindings against what the shader declares, and declared bindings the shader never uses."""
    planned = {k: v for b in pass_plan.bindings for k, v in declarations(b.declaration).items()}
    shader = declarations(wgsl)
    out = []
    for key in sorted(planned.keys() | shader.keys()):
        want, got = planned.get(key), shader.get(key)
        where = f"@group({key[0]}) @binding({key[1]})"
        if got is None:
            out.append(f"{where} {want[1]!r} is in the plan but the shader does not declare it")
        elif want is None:
            out.append(f"{where} {got[1]!r} is declared by the shader but is not in the plan")
        elif want != got:
            out.append(
                f"{where}: the plan has var<{want[0]}> {want[1]}: {want[2]}, "
                f"the shader declares var<{got[0]}> {got[1]}: {got[2]}"
            )
    body = DECLARATION.sub("", COMMENTS.sub("", wgsl))
    out += [
        f"binding {name!r} is declared but never used"
        for _, name, _ in shader.values()
        if not re.search(rf"\b{re.escape(name)}\b", body)
    ]
    return out


def shaders(package: Package, generated, compiler=None) -> list[Finding]:
    """Per variant and dtype: render, check bindings, compile with ``compiler`` (a
    :class:`~conformance.tools.lint_compile.DeviceCompiler`; None: render only)."""
    m, planner, out = package.manifest, Planner(package.manifest), []
    pipeline = compiler.for_package(package) if compiler else None
    env = template_environment(package)  # each template compiled once for all the renders below
    order = {v.id: i for i, v in enumerate(m.variants)}
    for (vid, dtypes), case in sorted(representatives(generated).items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        if compiler and "float16" in dtypes and "shader-f16" not in compiler.features:
            continue
        plan = planner.plan_case(case.call_args(), case.profile, case.tunables)
        for pass_plan, spec in zip(plan.passes, m.variant(vid).passes):
            where = f"{'+'.join(WGSL_DTYPE[d] for d in dtypes)} (case {case.id}): pass {pass_plan.name}"
            try:
                wgsl = render(package, plan, pass_plan, env)
            except TemplateError as err:
                out.append(Finding(m.file, spec.pointer, f"{where}: {err}"))
                continue
            out += [Finding(m.file, spec.pointer, f"{where}: {p}") for p in binding_problems(pass_plan, wgsl)]
            if pipeline:
                try:
                    pipeline(plan, pass_plan)
                except KernelRuntimeError as err:
                    out.append(Finding(m.file, spec.pointer, f"{where}: {err}"))
    return out


# -- shared templates -------------------------------------------------------------------------------
def shared_templates(packages: list[Package]) -> list[Finding]:
    """Identically named templates of different packages must be byte-identical."""
    by_name: dict[str, list[Path]] = defaultdict(list)
    texts: dict[Path, bytes] = {}
    out = []
    for p in packages:
        for path in sorted(p.root.rglob("*.jinja")):
            try:  # a regular file of the package, size-capped: never a FIFO, /dev/zero or a file outside
                texts[path] = read_confined(p.root, path, MAX_PACKAGE_FILE, TemplateError)
            except TemplateError as err:
                out.append(Finding(str(path), "", err.detail))
                continue
            by_name[path.relative_to(p.root).as_posix()].append(path)
    for name, paths in sorted(by_name.items()):
        digests = {p: hashlib.sha256(texts[p]).hexdigest() for p in paths}
        if len(set(digests.values())) < 2:
            continue
        order = list(digests.values())  # the most common content is the reference; ties: the first package
        common = max(order, key=lambda h: (order.count(h), -order.index(h)))
        ref = next(p for p in paths if digests[p] == common)
        ref_lines = texts[ref].decode("utf-8", errors="replace").splitlines()
        for path in paths:
            if digests[path] != common:
                lines = texts[path].decode("utf-8", errors="replace").splitlines()
                line = next(
                    (i + 1 for i, (a, b) in enumerate(zip(ref_lines, lines)) if a != b),
                    min(len(lines), len(ref_lines)) + 1,
                )
                out.append(
                    Finding(
                        str(path),
                        "",
                        f"template {name} differs from {_shown(str(ref))} (first at "
                        f"line {line}); identically named templates must be identical",
                    )
                )
    return out


# -- template branches no case renders ------------------------------------------------------------
def shipped(package: Package) -> bool:
    """Whether ``package`` is one of this repository's own (under its ``specs/``): held to no dead code."""
    return Path(package.root).resolve().is_relative_to(Path(REPO_SPECS).resolve())


def dead_branches(linted: list[tuple[Package, list]], notes: list[str] | None) -> list[Finding]:
    """Template branches, loop bodies and macros no generated case renders (``linted``: each package with its
    templates' coverage by its generated cases, pooled here over the packages that share a template): a finding
    for a shipped package, a ``dead-template-branch`` note (the flag the conformance report carries) for another
    author's."""
    coverages = pooled([t for _, coverage in linted for t in coverage])
    by_package = {package.name: package for package, _ in linted}
    out = []
    for cov in coverages:
        for branch in cov.dead:
            if shipped(by_package[cov.package]):
                out.append(
                    Finding(
                        str(Path(cov.root) / cov.template),
                        str(branch.line),
                        f"dead template branch in a shipped package: {branch.kind} `{branch.condition}`: "
                        f"no generated case renders it; move it into a proposal's own template, or add "
                        f"the case that renders it",
                    )
                )
            elif notes is not None:
                notes.append(f"WEAK {dead_branch(cov, branch)}")
        if notes is not None:  # said, not failed: a fallback that only empty tensors select renders such code
            notes += [f"WEAK {idle_branch(cov, branch)}" for branch in cov.idle]
    return out


# -- the reference loader plans as the suite does -----------------------------------------------------
#: Differences a loader finding shows (it says how many there are in all).
SHOWN_DIFFERENCES = 5


def loader_plans(package: Package, generated, planner) -> list[Finding]:
    """Every generated call planned by the reference JavaScript loader (``loader/``: what a web page loads the
    package with) and by the suite: a call the loader cannot plan, or plans otherwise, is a finding naming the
    call, the field and both values, since certifying the package would vouch for what no page can load."""
    try:
        found = compare_package(package, generated, planner)
    except ConformanceError as err:  # the loader's Node process died or hung on this package
        return [Finding(package.manifest.file, "", f"the reference JavaScript loader cannot plan it: {err}")]
    if not found:
        return []
    calls = len({d.case for d in found})
    shown = [str(d) for d in found[:SHOWN_DIFFERENCES]] + (["..."] if len(found) > SHOWN_DIFFERENCES else [])
    return [
        Finding(
            package.manifest.file,
            "",
            "\n".join(
                [
                    f"the reference JavaScript loader ({planner.label}) plans {calls} of {len(generated)} generated calls "
                    f"otherwise than the suite ({len(found)} differences): a page could not load what the suite certifies",
                    *shown,
                ]
            ),
        )
    ]


# -- all of it --------------------------------------------------------------------------------------
@dataclass
class _Offline:
    """What lint finds in one package without a device: its generated cases (None: generation failed), findings,
    template coverage, and the portable-subset check's counts (None: not checked)."""

    generated: list | None
    findings: list[Finding]
    coverage: list
    stats: object = None


def _offline(package: Package, engine=None, render: bool = True, planner=None) -> _Offline:
    """Generate ``package``'s cases and check them: expressions, reachable variants, the renders and their
    bindings (with ``render``), template coverage, the portable subset (with ``engine``), and once portable, the
    reference loader's plans (with ``planner``)."""
    findings, stats = [], None
    try:
        generated = cases.generate(package)
        findings += failing_expressions(package, generated)
        findings += unreachable(package, generated)
        if render:
            findings += shaders(package, generated, None)
        coverage = template_coverage(package, generated)
        if engine is not None:
            problems, stats = portable.check(package, generated, engine)
            findings += [Finding(*p) for p in problems]
            if planner is not None and not problems:  # the loader runs the same engine: a construct it lacks
                findings += loader_plans(package, generated, planner)  # is said once, above, with its rewrite
    except Exception as err:  # noqa: BLE001 -- this package's finding; the others are still linted
        return _Offline(None, findings + [_finding(package, err)], [], stats)
    return _Offline(generated, findings, coverage, stats)


def _finding(package: Package, err: Exception) -> Finding:
    if isinstance(err, ExpressionError):
        return Finding(err.file or package.manifest.file, err.pointer, err.detail)
    if isinstance(err, ConformanceError):
        return Finding(package.manifest.file, "", str(err))
    return Finding(package.manifest.file, "", f"unexpected {type(err).__name__}: {err}")


def lint(
    directory: Path, compiler=None, engine=None, compared: dict | None = None, notes: list[str] | None = None
) -> list[Finding]:
    """Every finding for the packages at or under ``directory``; ``compiler`` (a
    :class:`~conformance.tools.lint_compile.DeviceCompiler`, or a function that opens one, called once the
    packages are checked without it; it may give None) None skips compilation, ``engine`` (a
    ``jsjinja.JsJinja``) None the portable-subset check, whose counts go into ``compared`` (package name ->
    ``portable.Stats``), and the reference loader's plans of every generated call (both need Node and
    @huggingface/jinja). ``notes``, when given, receives what is not an error but weakens the package's
    certification (a package without op record).

    What needs no device runs in worker processes, a package each (``cases.workers``); the device is opened
    after them, in this process, and compiles each package's renders. This module imports nothing of
    ``conformance.gpu``: linting without compiling never loads it (``tests/layout/test_imports.py``)."""
    dirs = find_package_dirs(Path(directory))
    if not dirs:
        return [Finding(str(directory), "", "no kernel package here (no manifest.json)")]
    findings, packages = [], []
    for d in dirs:
        package, problems = load(d)
        findings += problems
        if package is not None:
            packages.append(package)
    render_here = compiler is not None  # with a device, this process renders what it compiles
    planner = None
    if engine is not None:
        try:
            planner = open_planner()
        except EngineUnavailable as err:
            findings.append(Finding("<node>", "", f"{err}: the reference loader's plans cannot be checked"))
    try:
        checked = workers.map_packages(
            partial(_offline, engine=engine, render=not render_here, planner=planner), packages
        )
    finally:
        if planner is not None:
            planner.close()
    compiler = compiler() if callable(compiler) else compiler
    linted = []
    for package, result in zip(packages, checked):
        note = missing_record_note(package.name)
        if note and notes is not None:
            notes.append(note)
        if isinstance(result, Exception):  # only what _offline itself lets through
            findings.append(_finding(package, result))
            continue
        findings += result.findings
        if result.generated is None:
            continue
        if render_here:
            try:
                findings += shaders(package, result.generated, compiler)
            except Exception as err:  # noqa: BLE001 -- this package's finding; the others are still linted
                findings.append(_finding(package, err))
        linted.append((package, result.coverage))
        if compared is not None and result.stats is not None:
            compared[package.name] = result.stats
    for name, roots in duplicate_names(packages).items():
        findings += [
            Finding(str(r), "", f"op id {name!r} is also the op id of {', '.join(str(o) for o in roots if o != r)}")
            for r in roots
        ]
    try:
        findings += dead_branches(linted, notes)
    except ConformanceError as err:
        findings.append(Finding(str(directory), "", f"template coverage: {err}"))
    return findings + shared_templates(packages)
