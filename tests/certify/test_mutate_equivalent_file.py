"""``mutate --equivalent FILE``: a kernel repository argues its own equivalent mutants, in the shipped format."""

from __future__ import annotations

import pytest

from conformance.__main__ import main
from conformance.tools.mutate import Mutant, argue
from conformance.tools.mutate.equivalence import load_arguments
from conformance.tools.mutate.report import markdown, summarize

ARGUED = """\
- package: Silu
  pattern: 'Silu/tpl/bounds/L12:.*'
  why: >-
    line 12 guards the empty call only: no invocation runs there
"""


def mutant(mid: str) -> Mutant:
    return Mutant(mid, "com.example.Silu", "silu.wgsl.jinja", "bounds", "`if (i >= n)` -> `if (i > n)`")


def test_an_outside_file_argues_its_own_mutants(tmp_path):
    path = tmp_path / "equivalent.yaml"
    path.write_text(ARGUED)
    arguments = load_arguments(path)
    argued, other = mutant("Silu/tpl/bounds/L12:3:>=->"), mutant("Silu/tpl/bounds/L20:3:>=->")
    argue("Silu", [argued, other], arguments)
    assert argued.status == "equivalent" and "guards the empty call only" in argued.equivalence
    assert other.status == "pending"
    plain = mutant("Silu/tpl/bounds/L12:3:>=->")
    argue("Silu", [plain])  # without the file: only the shipped arguments, none for Silu
    assert plain.status == "pending"


def test_an_argued_alternative_kernel_is_its_own_class_outside_the_kill_rate(tmp_path):
    path = tmp_path / "equivalent.yaml"
    path.write_text(
        ARGUED + "- package: Silu\n  class: alternative\n  pattern: 'Silu/tpl/bounds/L20:.*'\n"
        "  why: another summation order, within the tolerance\n"
    )
    arguments = load_arguments(path)
    same, other, left = (mutant(f"Silu/tpl/bounds/L{n}:3:>=->") for n in (12, 20, 30))
    argue("Silu", [same, other, left], arguments)
    assert (same.status, other.status, left.status) == ("equivalent", "alternative", "pending")
    left.status = "survived"
    killed = mutant("Silu/tpl/bounds/L40:3:>=->")
    killed.status = "killed"
    result = summarize([same, other, left, killed], {}, 1.0, 1)
    assert (result["equivalent"], result["alternative"], result["kill_rate"]) == (1, 1, 0.5)
    text = markdown(result)
    assert "## Alternative correct kernels (argued)" in text
    assert "**Why another correct kernel:** another summation order" in text


@pytest.mark.parametrize(
    "text, words",
    [
        ("- package: Silu\n  pattern: '('\n  why: x\n", "entry 0: pattern '(' is not a regular expression"),
        ("package: Silu\n", "expected a YAML list"),
        ("- {package: Silu, pattern: x}\n", "entry 0 must have exactly the strings package, pattern and why"),
        (
            "- {package: Silu, pattern: x, why: y, class: maybe}\n",
            "entry 0: class 'maybe' is not one of equivalent, alternative",
        ),
    ],
)
def test_a_bad_file_is_one_clear_error_before_anything_runs(tmp_path, capsys, text, words):
    path = tmp_path / "equivalent.yaml"
    path.write_text(text)
    assert main(["mutate", "--equivalent", str(path), "specs/com.microsoft.Gelu"]) == 2
    err = capsys.readouterr().err
    assert f"error: --equivalent {path}: " in err and words in err
