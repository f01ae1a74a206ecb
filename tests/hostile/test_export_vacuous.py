"""``export`` never publishes a portable-subset pass that compared no template (issue 51, item 9).

metadata.json's ``portableSubset`` tells whoever loads the package in JavaScript whether @huggingface/jinja renders
it as the suite does. A template that renders in no context (each render an error) and a package that accepts no
call leave the check nothing to compare, and it said ``checked: true, passed: true, templateContexts: 0`` while
``lint`` failed the same package. Each is a copy of the shipped Gelu, exported through the command line.
"""

from __future__ import annotations

import json
import shutil

import pytest

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import TEMPLATE, edit, run_cli

GELU = "com.microsoft.Gelu"


def _undefined_in_every_render(package):
    edit(package / TEMPLATE, "{% if usesF16 %}\n", "{{ no_such_thing.field }}\n{% if usesF16 %}\n", count=1)


def _no_call_accepted(package):
    manifest = json.loads((package / "manifest.json").read_text())
    for variant in manifest["variants"]:
        variant["when"].append("numel(shapes.X) < 0")
    (package / "manifest.json").write_text(json.dumps(manifest, indent=1))


#: (how the package is broken, what lint says of it, why metadata.json says nothing was compared)
BROKEN = [
    (
        _undefined_in_every_render,
        "'no_such_thing' is undefined",
        "no template compared: Jinja2 rendered none of the 13 template context(s) of the generated calls (each a "
        "render error; `python -m conformance lint` names them)",
    ),
    (
        _no_call_accepted,
        "is selected by no call",
        "no template compared: no generated call is accepted, so no template context was rendered",
    ),
]


@pytest.mark.parametrize("breaks, linted, reason", BROKEN, ids=["renders-in-no-context", "accepts-no-call"])
def test_a_check_that_compared_no_template_says_so(tmp_path, breaks, linted, reason):
    package = tmp_path / "specs" / GELU
    shutil.copytree(REPO_SPECS / GELU, package)
    breaks(package)
    lint = run_cli("-P", "-m", "conformance", "lint", "--no-compile", "--require-js", str(package.parent))
    assert lint.returncode == 1 and linted in lint.stdout + lint.stderr, lint.stdout[-3000:] + lint.stderr[-3000:]
    export = run_cli("-P", "-m", "conformance", "export", str(package))
    assert export.returncode == 0 and "Traceback" not in export.stderr, export.stdout + export.stderr
    check = json.loads((package / "metadata.json").read_text())["portableSubset"]
    assert check["checked"] is False and "passed" not in check, check
    assert check["reason"] == reason and check["templateContexts"] == 0 and check["expressionEvaluations"] > 100
    assert f"export: {GELU}: portable-subset check: not checked ({reason})" in export.stdout, export.stdout
