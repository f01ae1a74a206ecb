"""The op record is part of what a package is: a package without one is said once, up front, by lint, cases and
pytest, and the golden digest covers what the generator reads of the record, so a missing or changed record fails
``cases --check`` naming the record instead of silently writing another case list."""

from __future__ import annotations

import dataclasses
import sys

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
    assert cases_cli(kernels, "--without-record") == 0
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

    unregister(OP)  # the hook's environment without the author's distribution
    assert cases_cli(kernels, "--check") == 1
    err = capsys.readouterr().err
    assert f"written with another op record ({OP} structure=elementwise" in err and f"now none for {OP}" in err
    assert load_matching_golden(kernels / "kernel-cases", package)[0] is None

    wide = DataRecipe(
        "exgelu-wide", lambda rng, shape, dtype, scale: rng.normal(0, scale, shape), (10.0,), ("X",), "wide inputs"
    )
    register(outside_record(data=(wide,)))  # the author's record gained a data recipe
    assert cases_cli(kernels, "--check") == 1
    err = capsys.readouterr().err
    assert "data=exgelu-wide" in err and "written with another op record" in err


SILU = "com.example.Silu"


@pytest.fixture
def silu_repo(tmp_path, monkeypatch):
    """What a new author has after ``conformance new com.example.Silu`` and ``pip install -e ./records``: the
    golden files written with the record registered at run time, the record now found through its entry point."""
    from conformance.ops import registry
    from conformance.tools.skeleton import names, write_skeleton

    write_skeleton(SILU, "elementwise", tmp_path)
    n = names(SILU)
    info = tmp_path / "records" / f"{n['module']}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {n['dist']}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[conformance.ops]\n{n['entry']} = {n['module']}:RECORD\n")
    monkeypatch.syspath_prepend(str(tmp_path / "records"))
    registry.reload()
    yield tmp_path
    monkeypatch.undo()
    registry.reload()


def silu_cases(root, *extra) -> int:
    return main(["cases", "--specs", str(root / "kernels"), "--out", str(root / "kernel-cases"), *extra])


def test_a_description_edit_is_not_called_another_op_record(silu_repo, capsys):
    """Issue 41, item 1: the same record, found another way (run-time registration by ``new``, then the installed
    distribution), is the same record: an edited description makes the digest stale, not the record."""
    sidecar = digest_path(silu_repo / "kernel-cases", SILU)
    assert "(registered at run time)" in sidecar.read_text()
    manifest = silu_repo / "kernels" / SILU / "manifest.json"
    manifest.write_text(manifest.read_text().replace("Float16 and float32.", "Float16 and float32, for Silu."))
    assert silu_cases(silu_repo, "--check") == 0
    out, err = capsys.readouterr()
    assert "another op record" not in out + err and "error" not in err, out + err
    assert "it is stale (the manifest or the case generator changed" in out, out
    assert f"  {SILU}: same calls and outcomes; its digest file does not match" in out, out
    assert f"{SILU}: up to date" not in out
    assert silu_cases(silu_repo) == 0
    capsys.readouterr()
    assert "(distribution com-example-silu-record 0.1)" in sidecar.read_text()
    assert silu_cases(silu_repo, "--check") == 0
    assert f"  {SILU}: up to date" in capsys.readouterr().out


def test_without_the_record_the_hint_says_install_it_and_nothing_is_written(silu_repo, capsys, monkeypatch):
    """Issue 41, item 6: in a Python without the record the check says to install it (not to rewrite the golden
    files), and ``cases`` refuses to write golden files that would say ``record: none``."""
    from conformance.ops import registry

    golden_file = silu_repo / "kernel-cases" / f"{SILU}.yaml"
    before = golden_file.read_text(), digest_path(silu_repo / "kernel-cases", SILU).read_text()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(silu_repo / "records")])  # not installed
    registry.reload()
    assert silu_cases(silu_repo, "--check") == 1
    err = capsys.readouterr().err
    assert "written with another op record" in err and f"now none for {SILU}" in err, err
    assert f"has no op record for {SILU}: install the distribution that registers it" in err, err
    assert "pip install -e ./records" in err and "do not rewrite the golden files" in err
    assert "run `python -m cases" not in err, err
    assert silu_cases(silu_repo) == 2
    err = capsys.readouterr().err
    assert f"not writing its golden file: this Python ({sys.executable}) has no op record for {SILU}" in err, err
    assert "--without-record" in err
    assert (golden_file.read_text(), digest_path(silu_repo / "kernel-cases", SILU).read_text()) == before
    assert silu_cases(silu_repo, "--without-record") == 0
    assert f"record: none for {SILU}" in digest_path(silu_repo / "kernel-cases", SILU).read_text()
