"""The op record is part of what a package is: a package without one is said once, up front, by lint, cases and
pytest, and the golden digest covers what the generator reads of the record, so a missing or changed record fails
``cases --check`` naming the record instead of silently writing another case list."""

from __future__ import annotations

import dataclasses

import pytest

from cases.golden import digest_path, load_matching_golden, record_line
from conformance.__main__ import main
from conformance.engine.package import load_package
from conformance.ops import DataRecipe, missing_record_note, record_for, register, unregister
from tests.gate.conftest import GELU, ROOT
from tests.ops.third_party import outside_copy

OP = "com.example.Gelu"


def outside_record(**changes):
    """The built-in Gelu record under the outside op id (its own distribution would bring it)."""
    return dataclasses.replace(record_for(GELU), op=OP, **changes)


@pytest.fixture
def kernels(tmp_path):
    """kernels/com.example.Gelu: Gelu's package under another author's domain (no built-in record)."""
    outside_copy(ROOT / "specs" / GELU, tmp_path / "kernels")
    yield tmp_path
    unregister(OP)


def cases_cli(kernels, *extra) -> int:
    return main(["cases", "--specs", str(kernels / "kernels"), "--out", str(kernels / "kernel-cases"), *extra])


def test_a_package_without_record_is_said_once_up_front(kernels, capsys):
    note = missing_record_note(OP)
    assert note and "values will not be checked" in note and f"registers {OP}" in note
    (kernels / "kernel-cases").mkdir()
    assert cases_cli(kernels) == 0
    err = capsys.readouterr().err
    assert err.count(f"warning: {OP}: no op record") == 1, err
    assert main(["lint", str(kernels / "kernels"), "--no-compile"]) == 0
    assert capsys.readouterr().err.count(f"warning: {OP}: no op record") == 1
    register(outside_record())
    assert missing_record_note(OP) is None


def test_a_missing_or_changed_record_fails_the_check_naming_it(kernels, capsys):
    (kernels / "kernel-cases").mkdir()
    register(outside_record())
    assert cases_cli(kernels) == 0
    package = load_package(kernels / "kernels" / OP)
    sidecar = digest_path(kernels / "kernel-cases", OP).read_text()
    assert sidecar.splitlines()[1] == record_line(package) and "structure=elementwise" in sidecar
    assert cases_cli(kernels, "--check") == 0
    capsys.readouterr()

    unregister(OP)   # the hook's environment without the author's distribution
    assert cases_cli(kernels, "--check") == 1
    err = capsys.readouterr().err
    assert f"written with another op record ({OP} structure=elementwise" in err and f"now none for {OP}" in err
    assert load_matching_golden(kernels / "kernel-cases", package)[0] is None

    wide = DataRecipe("exgelu-wide", lambda rng, shape, dtype, scale: rng.normal(0, scale, shape),
                      (10.0,), ("X",), "wide inputs")
    register(outside_record(data=(wide,)))   # the author's record gained a data recipe
    assert cases_cli(kernels, "--check") == 1
    err = capsys.readouterr().err
    assert "data=exgelu-wide" in err and "written with another op record" in err
