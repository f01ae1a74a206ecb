"""The reference loader renders within the suite's budget of one render (issue 51, item 5).

A published package whose digests match can still hold a template that never ends. Before the budget,
``range(200000000)`` grew Node's heap until V8 aborted (a crashed tab in a user's page) and two nested
``range(100000)`` loops were still rendering after minutes; the suite's sandbox refuses both. Now the loader counts
the render's work, values and output against the sandbox's budgets (``loader/src/budget.js``), and an overrun is a
PackageError naming the template file, the pass and the budget.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conformance.config import REPO_LOADER
from conformance.engine.package import load_package
from conformance.shader import render
from tests.hostile.conftest import TEMPLATE
from tests.loader.driver import call_loader

GELU = "com.microsoft.Gelu"
CALL = {"package": GELU, "method": "render", "inputs": {"X": {"shape": [8], "dtype": "float32"}}}
DOUBLED = "{% set s = namespace(t='x') %}{% for i in range(16) %}{% set s.t = s.t ~ s.t %}{% endfor %}"

#: label -> (what is put before the template, the budget the error must name)
BOMBS = {
    "range": (
        "{% for i in range(200000000) %}x{% endfor %}",
        "range() of 200000000 characters or items, more than 1048576 (MAX_VALUE",
    ),
    "nested-loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "rendering needs more than 4194304 units of work (RENDER_WORK_LIMIT",
    ),
    "doubling-string": (
        "{% set s = namespace(t='x') %}{% for i in range(40) %}{% set s.t = s.t ~ s.t %}{% endfor %}{{ s.t }}",
        "units of work (RENDER_WORK_LIMIT",
    ),
    "output": (DOUBLED + "{{ s.t }}" * 17, "characters or items, more than 1048576 (MAX_OUTPUT"),  # 17 x 65536
    # one step that would build 65536 x 65537 characters: V8's longest string ends it before it is built
    "one-step-growth": (DOUBLED + "{{ s.t.replace('', s.t) }}", "the JavaScript engine's own limit: Invalid string"),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every bomb rendered by the loader in one Node process (a crash fails them all), with the shipped Gelu."""
    tmp = tmp_path_factory.mktemp("loader-budget")
    packages = {GELU: load_package(GELU)}
    for label, (prefix, _) in BOMBS.items():
        root = tmp / label / GELU
        shutil.copytree(load_package(GELU).root, root)
        template = root / TEMPLATE
        template.write_text(prefix + template.read_text())
        packages[label] = load_package(root)
    calls = {label: {**CALL, "package": label} for label in packages}
    return call_loader(tmp, packages, calls)


@pytest.mark.parametrize("label", sorted(BOMBS))
def test_a_render_over_the_budget_is_a_located_error(outcomes, label):
    got = outcomes[label]
    assert got.get("name") == "PackageError", got
    assert got["file"] == f"version 1/{TEMPLATE}", got
    assert (
        f"version 1/{TEMPLATE}: rendering pass Gelu.vec4 (variant vec4): refused by the render budget: "
        in got["message"]
    ), got
    assert BOMBS[label][1] in got["message"], got


def test_a_shipped_template_renders_within_the_budget(outcomes):
    assert outcomes[GELU]["ok"] and outcomes[GELU]["value"][0] > 1000, outcomes[GELU]


def test_a_template_over_max_template_is_refused_before_it_is_parsed(tmp_path):
    root = tmp_path / GELU
    shutil.copytree(load_package(GELU).root, root)
    template = root / TEMPLATE
    template.write_text(template.read_text() + "//" + "x" * render.MAX_TEMPLATE + "\n")
    got = call_loader(tmp_path, {GELU: load_package(root)}, {"big": CALL})["big"]
    assert got.get("name") == "PackageError" and got["file"] == f"version 1/{TEMPLATE}", got
    assert f"more than {render.MAX_TEMPLATE} (MAX_TEMPLATE" in got["message"], got


def test_the_loaders_budget_is_the_python_sandboxs():
    """One set of numbers: the loader's constants are the sandbox's (conformance/shader/render.py)."""
    names = ["RENDER_WORK_LIMIT", "MAX_VALUE", "MAX_OUTPUT", "MAX_TEMPLATE"]
    script = (
        f"const m = await import({json.dumps((REPO_LOADER / 'src' / 'budget.js').resolve().as_uri())}); "
        f"console.log(JSON.stringify({json.dumps(names)}.map((n) => m[n])));"
    )
    done = subprocess.run(
        [shutil.which("node"), "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [getattr(render, n) for n in names]
