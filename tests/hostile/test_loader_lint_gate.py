"""The CI gate plans every generated call with the reference loader (issue 51, item 8).

A web page loads a package with the reference loader, not with the suite: a package the suite lints and certifies
but the loader cannot plan (a type variable named ``constructor`` threw a TypeError on every call) was certified
for no page. ``lint``, where Node and @huggingface/jinja are present, now plans each package's generated calls with
the loader too and fails, naming the package, the call and the field, where the loader cannot plan what the suite
plans or plans it otherwise.
"""

from __future__ import annotations

import shutil

from cases.golden import load_golden
from conformance.config import REPO_LOADER
from conformance.engine.package import REPO_SPECS, load_package
from conformance.tools import lint as lint_module
from conformance.tools.jsjinja import OVERRIDE, open_engine
from conformance.tools.loader_plans import compare_package, open_planner
from tests.hostile.conftest import ROOT, run_cli
from tests.hostile.test_loader_prototype_names import constructor_gelu
from tests.loader.planted import planted_loader

SOFTMAX = "com.microsoft.Softmax"


def test_lint_fails_a_package_the_loader_plans_otherwise(tmp_path, monkeypatch):
    """A loader whose dispatch split is off by one: lint names the package, a call and the differing field."""
    planted = planted_loader(
        tmp_path, "layout.js", "const x = Math.ceil(groups / (y * z));", "const x = Math.floor(groups / (y * z));"
    )
    monkeypatch.setattr(lint_module, "open_planner", lambda: open_planner(planted))
    with open_engine() as engine:
        findings = lint_module.lint(REPO_SPECS / SOFTMAX, None, engine)
    found = [str(f) for f in findings if "reference JavaScript loader" in str(f)]
    assert len(found) == 1, [str(f) for f in findings]
    first, *lines = found[0].splitlines()
    assert f"{SOFTMAX}/manifest.json:/: the reference JavaScript loader (loader {planted}" in first, first
    assert "generated calls otherwise than the suite" in first, first
    assert lines and lines[0].strip().startswith("Softmax/f32/"), lines  # the call, by its case id
    assert "passes[0].dispatch.workgroups[0]: Python " in lines[0] and ", JavaScript " in lines[0], lines


def test_the_gate_passes_a_prototype_named_type_variable_the_loader_plans(tmp_path, package_copy):
    """The Gelu whose type variable is ``constructor``: the suite plans it, and so does the loader, so the
    gate (with the loader's plans checked) passes it."""
    package = constructor_gelu(package_copy)
    shutil.copytree(package.root, tmp_path / "pr" / "kernels" / package.root.name)
    proc = run_cli(
        "-P",
        "-m",
        "conformance",
        "lint",
        "kernels",
        "--no-compile",
        "--require-js",
        cwd=tmp_path / "pr",
        env={"CONFORMANCE_JINJA_JS": str(ROOT / "node_modules" / "@huggingface" / "jinja")},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "checked against @huggingface/jinja" in out, out[-3000:]


def test_the_loader_plans_where_no_node_modules_is_above_it(tmp_path, monkeypatch):
    """An installed suite's loader (``conformance/loader/``) has no node_modules/ above it: the planner hands it
    the @huggingface/jinja lint located (here through CONFORMANCE_JINJA_JS), so a kernel repository's gate plans."""
    loader = tmp_path / "loader"
    shutil.copytree(REPO_LOADER, loader)
    monkeypatch.setenv(OVERRIDE, str(ROOT / "node_modules" / "@huggingface" / "jinja"))
    package = load_package("com.microsoft.Gelu")
    with open_planner(loader) as engine:
        assert not compare_package(package, load_golden(ROOT / "cases" / "com.microsoft.Gelu.yaml")[:20], engine)
