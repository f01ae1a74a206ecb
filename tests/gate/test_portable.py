"""The portable-subset check of ``lint``: each construct Jinja2 and @huggingface/jinja treat differently, planted in
a copy of a shipped package, is an error naming the place, the construct and the rewrite; ``--no-js`` passes it."""

from __future__ import annotations

import json
import os
import re

import pytest

import cases
from conformance.__main__ import main
from conformance.engine.package import load_package
from conformance.tools import jsjinja as portable_errors
from conformance.tools import portable
from conformance.tools.jsjinja import OVERRIDE, open_engine
from conformance.tools.lint import lint
from tests.gate.conftest import GELU, ROOT, edit_manifest, variant

TEMPLATE = "elementwise-bias-gelu.wgsl.jinja"


@pytest.fixture(scope="module")
def engine():
    with open_engine() as running:  # scripts/setup.sh installs node and the pinned package: no skip here
        yield running


def plant_predicate(specs, predicate: str) -> str:
    """``predicate`` (true under Jinja2 for every call) appended to Gelu's scalar variant; its JSON pointer."""

    def add(raw):
        variant(raw, "scalar")["when"].append(predicate)

    edit_manifest(specs / GELU, add)
    raw = json.loads((specs / GELU / "manifest.json").read_text())
    index = next(i for i, v in enumerate(raw["variants"]) if v["id"] == "scalar")
    return f"/variants/{index}/when/{len(raw['variants'][index]['when']) - 1}"


def plant_template(specs, line_text: str) -> int:
    """``line_text`` added after the declarations of Gelu's template; its template line."""
    path = specs / GELU / TEMPLATE
    text = path.read_text().replace("{{ declarations }}\n", "{{ declarations }}\n" + line_text + "\n", 1)
    path.write_text(text)
    return text.splitlines().index(line_text.splitlines()[0]) + 1


def shown(path) -> str:
    """A path as lint prints it (relative to here unless that climbs out)."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


def errors(specs, engine) -> list[str]:
    found = [str(f) for f in lint(specs / GELU, engine=engine)]
    assert main(["lint", str(specs / GELU), "--no-compile", "--no-js"]) == 0, "Jinja2 alone accepts the package"
    return found


def only(found: list[str], where: str, *words: str) -> str:
    assert len(found) == 1, found
    assert found[0].startswith(where), found
    for word in words:
        assert word in found[0], (word, found[0])
    return found[0]


@pytest.mark.parametrize(
    "predicate, construct, detail, rewrite",
    [
        ("numel(shapes.X) < 1e30", "an exponent literal", "`1e30`", "positional digits"),
        ("-7 % 3 == 2", "negative modulo", "Jinja2 gives 2, JavaScript -1", "(a % b + b) % b"),
        ("shapes.X == shapes.Y", "list equality", "`shapes.X == shapes.Y`", "compare the elements"),
        (
            "numel(shapes.X) * 2 ** 60 + 1 > numel(shapes.X) * 2 ** 60",
            "an integer beyond 2^53",
            "+ 1` = ",
            "divide before multiplying",
        ),
        (
            "0 <= numel(shapes.X) < 2 ** 40",
            "a chained comparison",
            "`0 <= numel(shapes.X) < 2 ** 40`",
            "`a < b and b < c`",
        ),
        ('dtypes.T >= "f16"', "an ordering of strings", '`dtypes.T >= "f16"`', "`==`, `!=` or `in`"),
    ],
)
def test_a_planted_expression_construct_is_named_with_its_rewrite(specs, engine, predicate, construct, detail, rewrite):
    pointer = plant_predicate(specs, predicate)
    only(
        errors(specs, engine),
        f"{shown(specs / GELU / 'manifest.json')}:{pointer}: ",
        f"not portable to @huggingface/jinja: {construct}",
        detail,
        rewrite,
    )


def test_an_exponent_literal_in_a_rule_is_named_where_it_is_written(specs, engine):
    def add(raw):
        raw["derive"] = {"small": "numel(shapes.X) < 1.5e3 or true"}
        variant(raw, "scalar")["when"].append("small")

    edit_manifest(specs / GELU, add)
    only(
        errors(specs, engine),
        f"{shown(specs / GELU / 'manifest.json')}:/derive/small: ",
        "an exponent literal `1.5e3`",
        "used by /variants/1/when/2",
    )


def test_an_import_is_named_at_its_template_line(specs, engine):
    (specs / GELU / "macros.wgsl.jinja").write_text("{% macro note() %}// a note{% endmacro %}\n")
    line = plant_template(specs, '{% import "macros.wgsl.jinja" as m %}\n{{ m.note() }}')
    only(
        errors(specs, engine),
        f"{shown(specs / GELU / TEMPLATE)}:{line}: ",
        "`{% import %}` of 'macros.wgsl.jinja'",
        "paste the macros into the template",
    )


def test_a_rendered_boolean_is_named_at_its_template_line(specs, engine):
    line = plant_template(specs, "// uses f16: {{ usesF16 }}")
    only(
        errors(specs, engine),
        f"{shown(specs / GELU / TEMPLATE)}:{line}: ",
        "a rendered boolean `False`",
        "'true' if x else 'false'",
        "first differs at line",
        "Jinja2 `// uses f16: False`, @huggingface/jinja `// uses f16: false`",
    )


def test_a_rendered_float_literal_is_named_at_its_line_though_jinja_folds_it(specs, engine):
    line = plant_template(specs, "// epsilon {{ 0.00001 }}")
    only(
        errors(specs, engine),
        f"{shown(specs / GELU / TEMPLATE)}:{line}: ",
        "a rendered float `1e-05`",
        "Jinja2 `// epsilon 1e-05`, @huggingface/jinja `// epsilon 0.00001`",
        "keep floats out of the text",
    )


def test_a_boolean_joined_in_a_template_is_named_at_its_line(specs, engine):
    line = plant_template(specs, '// {{ "uses f16: " ~ usesF16 }}')
    only(
        errors(specs, engine),
        f"{shown(specs / GELU / TEMPLATE)}:{line}: ",
        "a boolean or None joined with `~` of 'uses f16: ', False",
        "Jinja2 `// uses f16: False`",
    )


def test_shipped_packages_agree_final_newline_included(engine):
    """Every template ends in a newline; Jinja2 keeping it (keep_trailing_newline) differed from the JS engine on
    every context."""
    package = load_package(ROOT / "specs" / GELU)
    assert package.read_template(TEMPLATE).endswith("\n")
    found, stats = portable.check(package, cases.generate(package), engine)
    assert found == [] and stats.contexts > 0 and stats.expressions > 0


def test_the_same_value_of_what_an_expression_reads_is_compared_once():
    package = load_package(ROOT / "specs" / "com.microsoft.LayerNormalization")
    exprs = portable._Expressions(package.manifest)
    by_pointer = {item.pointer: portable.reads(item.tree) for item in exprs.items}
    assert by_pointer["/derive/epsilonOk"] == (("attributes", "epsilon"),)
    assert ("device", "features") in by_pointer["/derive/baseOk"]  # f16Ok reads the profile's features


def test_lint_says_why_the_check_is_skipped(specs, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["lint", str(specs / GELU), "--no-compile"]) == 0
    assert "lint: portable-subset check skipped: no node on PATH" in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setenv(OVERRIDE, str(specs))
    assert main(["lint", str(specs / GELU), "--no-compile"]) == 0
    assert f"skipped: no @huggingface/jinja in {OVERRIDE}={specs}" in capsys.readouterr().err
    assert main(["lint", str(specs / GELU), "--no-compile", "--require-js"]) == 1  # CI: not a skip
    assert (
        f"<node>:/: no @huggingface/jinja in {OVERRIDE}={specs}: the portable-subset check cannot run"
        in capsys.readouterr().out
    )


def test_lint_reports_what_it_compared(specs, capsys):
    assert main(["lint", str(specs / GELU), "--no-compile"]) == 0
    err = capsys.readouterr().err
    contexts = re.search(
        r"lint: com\.microsoft\.Gelu: (\d+) template contexts and (\d+) expression evaluations "
        r"compared",
        err,
    )
    assert contexts and int(contexts[1]) > 1 and int(contexts[2]) > 0, err
    assert "checked against @huggingface/jinja 0.5.11" in err


def test_a_dead_engine_is_one_packages_error_and_the_next_request_starts_another(engine):
    engine._proc.stdin.write(b"not JSON\n")  # what no request sends: the script dies on it
    engine._proc.stdin.flush()
    with pytest.raises(portable_errors.EngineFailed, match="(?s)the Node process has exited: .*SyntaxError"):
        engine._read_line()
    result = engine.request({"op": "eval", "bytes": {}, "scopes": [{}], "exprs": ["1 + 2"], "jobs": [[0, 0]]})
    assert result == [{"kind": "number", "value": 3}]
