"""The stages' dependencies point one way, and no module hides which stage it uses.

Layers, lowest first: the shared foundation (``conformance.errors``, ``conformance.config``), the manifest engine,
the op records (``conformance.ops``), the case generator (``cases``), the shader text work that needs no device
(``conformance.shader``: rendering, branch coverage, the stress rewrite, the stores-only check), the GPU runtime,
certification (the verdict and its reports), the implementations under test other than the suite's own runtime
(``conformance.impls``: certification names them only by entry-point strings), then the plugin and the tools side
by side, then the command lines. A module may import its own package and any lower layer; ``reference`` imports
nothing of the suite.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("conformance", "cases", "reference")

#: (layer rank, group). Same rank, other group: not allowed (plugin and tools are peers that do not import each other).
LAYERS = [
    ("conformance.errors", 0, "foundation"),
    ("conformance.config", 0, "foundation"),
    ("conformance.files", 0, "foundation"),
    ("conformance.progress", 0, "foundation"),
    ("conformance.engine", 1, "engine"),
    ("conformance.ops", 1.5, "ops"),  # op records: reference + foundation only; read by cases, certify, tools
    ("cases", 2, "cases"),
    ("conformance.shader", 2.5, "shader"),  # WGSL text work, no device: engine + foundation; read by gpu and up
    ("conformance.gpu", 3, "gpu"),
    ("conformance.certify", 4, "certify"),
    ("conformance.impls", 4.5, "impls"),  # ONNX Runtime, ORT Web, the JS loader: certify's interface, gpu's pages
    ("conformance.plugin", 5, "plugin"),
    ("conformance.tools", 5, "tools"),
    ("conformance.cli", 6, "cli"),
    ("conformance.__main__", 6, "cli"),
    ("cases.__main__", 6, "cli"),
    ("conformance.test_kernels", 6, "cli"),
]
#: Imports allowed inside functions: heavy optional dependencies, and scipy (0.5 s of import), loaded on use only.
LAZY_ALLOWED = {"onnxruntime", "onnx", "torch", "matplotlib", "scipy"}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def layer(name: str):
    best = None
    for prefix, rank, group in LAYERS:
        if (name == prefix or name.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, rank, group)
    return best


def imports(name: str, path: pathlib.Path):
    """(imported module, line, inside a function) for every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - child.level + 1] + ([base] if base else []))
                for alias in child.names:
                    candidate = f"{base}.{alias.name}"
                    found.append((candidate if candidate in ALL else base, child.lineno, in_function))
            elif isinstance(child, ast.Assign) and lazy_target(child.value):
                target = lazy_target(child.value)
                module = target if target in ALL else target.rpartition(".")[0]
                found.append((module if module in ALL else target, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return found


def lazy_target(node) -> str | None:
    """``on_use("pkg.mod")`` or ``on_use("pkg.mod", "name")`` (conformance.cli.lazy): an import made on first use,
    counted here as the module-level import it stands for."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "on_use"
        and node.args
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    ):
        return ".".join(a.value for a in node.args)
    return None


ALL = modules()
OURS = {m: p for m, p in ALL.items()}


def project_imports():
    for name, path in sorted(OURS.items()):
        for target, line, local in imports(name, path):
            if target.split(".")[0] in PACKAGES:
                yield name, path, target, line, local


def test_reference_imports_nothing_of_the_suite():
    bad = [
        f"{p.relative_to(ROOT)}:{line}: {t}"
        for n, p, t, line, _ in project_imports()
        if n.startswith("reference") and not t.startswith("reference")
    ]
    assert not bad, "\n".join(bad)


def test_dependencies_point_one_way():
    bad = []
    for name, path, target, line, _ in project_imports():
        if (
            name == "conformance"
            or target == "conformance"
            or name.startswith("reference")
            or target.startswith("reference")
        ):
            continue  # the public facade re-exports lazily; reference/ is checked above
        mine, theirs = layer(name), layer(target)
        assert mine and theirs, f"{name} or {target} has no layer: add it to LAYERS"
        if theirs[1] > mine[1] or (theirs[1] == mine[1] and theirs[2] != mine[2]):
            bad.append(f"{path.relative_to(ROOT)}:{line}: {name} ({mine[2]}) imports {target} ({theirs[2]})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles_between_modules():
    graph = defaultdict(set)
    for name, _, target, _, _ in project_imports():
        if target in OURS and target != name and name != "conformance":
            graph[name].add(target)
    state, cycles = {}, []

    def walk(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                walk(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])
    assert not cycles, "\n".join(cycles)


def test_imports_made_on_first_use_count_as_imports(tmp_path):
    """A command's ``on_use`` names are imports to the layering, so a lazy one cannot point up unseen."""
    source = tmp_path / "mod.py"
    source.write_text(
        'find = on_use("conformance.engine.package", "find_package_dirs")\nnp = on_use("numpy")\n'
        'def f():\n    x = on_use("cases")\n'
    )
    assert imports("conformance.gpu.mod", source) == [
        ("conformance.engine.package", 1, False),
        ("numpy", 2, False),
        ("cases", 4, True),
    ]  # inside a function: hidden, refused
    assert "conformance.gpu.device" in {t for t, _, _ in imports("conformance.cli.bench", ALL["conformance.cli.bench"])}


def test_imports_sit_at_module_level():
    """A function-local import hides a dependency; only heavy optional packages are loaded on use, with a reason."""
    bad = []
    for name, path in sorted(OURS.items()):
        lines = path.read_text().splitlines()
        for target, line, local in imports(name, path):
            if not local or name == "conformance":
                continue
            top = target.split(".")[0]
            commented = "#" in lines[line - 1]
            if top not in LAZY_ALLOWED or not commented:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not bad, "function-local imports:\n" + "\n".join(bad)


#: Work on WGSL text that needs no device, and what reaches it without one: the shader stage, lint's checks (what
#: ``lint --no-compile`` runs), mutate's mutants and the template check (issue 52, item 5).
DEVICE_FREE = (
    "conformance.shader",
    "conformance.tools.lint",
    "conformance.tools.mutate.mutants",
    "conformance.certify.report.templates",
)


def reached(start: str) -> dict[str, str]:
    """Every module of ours that ``start`` loads through module-level imports (``on_use`` ones included), each
    with the module that imported it first."""
    graph = defaultdict(set)
    for name, _, target, _, local in project_imports():
        if not local and target in OURS and target != name:
            graph[name].add(target)
    seen, todo = {start: ""}, [start]
    while todo:
        name = todo.pop()
        for target in sorted(graph[name]):
            if target not in seen:
                seen[target] = name
                todo.append(target)
    return seen


def test_the_device_free_work_reaches_nothing_of_the_gpu_stage():
    """Rendering, branch coverage, the stress rewrite and the stores-only check live below ``conformance.gpu``, and
    the tools that only read WGSL reach them without loading the device stage."""
    starts = sorted(m for m in OURS if any(m == s or m.startswith(s + ".") for s in DEVICE_FREE))
    assert set(DEVICE_FREE) <= set(starts), f"moved? {sorted(set(DEVICE_FREE) - set(starts))}"
    bad = [
        f"{start}: {via} imports {module}"
        for start in starts
        for module, via in reached(start).items()
        if module.startswith("conformance.gpu")
    ]
    assert not bad, "\n".join(bad)


def test_lint_without_compiling_loads_no_gpu():
    """``python -m conformance lint --no-compile`` renders and checks every pass with neither ``conformance.gpu``
    nor a WebGPU implementation loaded (the command imports what it runs when it runs it)."""
    code = (
        "import sys; from conformance.__main__ import main; "
        f"main(['lint', {str(ROOT / 'specs' / 'com.microsoft.Gelu')!r}, '--no-compile', '--no-js']); "
        "print([m for m in sys.modules if m.startswith(('conformance.gpu', 'wgpu', 'dawn'))], "
        "'conformance.shader.render' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[] True", out.stdout + out.stderr


def test_the_plugin_costs_nothing_until_it_runs():
    """Installed, the plugin loads in every pytest run of the environment: it must not pull in the suite."""
    code = (
        "import conformance.plugin, sys; "
        "print([m for m in ('numpy', 'wgpu', 'jinja2', 'jsonschema', 'cases', 'conformance.engine') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_plugin_runs_without_xdist(pytester):
    """xdist's hooks are optional: a run without xdist collects and reports normally."""
    result = pytester.runpytest_subprocess(
        str(ROOT / "conformance" / "test_kernels.py"),
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "--device=vulkan",
        "-q",
        "-k",
        "Gelu/f32/X[5]",
        f"--specs={ROOT / 'specs' / 'com.microsoft.Gelu'}",
    )  # one package: enough
    result.assert_outcomes(passed=result.parseoutcomes().get("passed", 0))
    assert result.parseoutcomes().get("passed", 0) >= 1 and result.ret == 0
    assert "INTERNALERROR" not in result.stdout.str()
