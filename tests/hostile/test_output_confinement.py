"""Outputs written without leaving their place (issue 11, item 2).

A symlink or a special file (FIFO, /dev/zero) where a package file or an output is expected is refused with a
message naming it, before any work, never followed, read or written through.
"""

from __future__ import annotations

import os

import pytest

from conformance.__main__ import main
from conformance.tools import export
from tests.hostile.conftest import run_cli, run_conformance, victim

GELU = "com.microsoft.Gelu"


# -- writes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["test.json", "bench.json"])
def test_export_refuses_a_symlinked_output_before_any_work(tmp_path, make_specs, capsys, name, monkeypatch):
    specs = make_specs(**{GELU: GELU})
    outside = victim(tmp_path)
    (specs / GELU / name).symlink_to(outside)
    built = []
    monkeypatch.setattr(export, "build_test", lambda *a, **k: built.append(a) or {})
    assert main(["export", str(specs / GELU)]) == 2
    assert not built  # refused before the cases were generated
    assert "symlink" in capsys.readouterr().err
    assert outside.read_text() == "precious\n"
    assert not (specs / GELU / ("bench.json" if name == "test.json" else "test.json")).exists()


def test_export_refuses_a_fifo_as_output(tmp_path, make_specs, capsys):
    specs = make_specs(**{GELU: GELU})
    os.mkfifo(specs / GELU / "test.json")
    assert main(["export", str(specs / GELU)]) == 2
    assert "FIFO" in capsys.readouterr().err


def test_python_m_cases_refuses_a_symlinked_golden_file_before_writing_any(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU, "com.microsoft.FastGelu": "com.microsoft.FastGelu"})
    out = tmp_path / "golden"
    out.mkdir()
    outside = victim(tmp_path)
    (out / f"{GELU}.yaml").symlink_to(outside)
    proc = run_cli("-m", "cases", "--specs", str(specs), "--out", str(out), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "symlink" in proc.stderr and "Traceback" not in proc.stderr
    assert outside.read_text() == "precious\n"
    assert not (out / "com.microsoft.FastGelu.yaml").exists()  # nothing written: the check came first


@pytest.mark.parametrize("kind", ["directory", "under-a-file", "symlink"])
def test_conformance_report_to_a_bad_path_fails_at_configure_time(tmp_path, make_specs, kind):
    specs = make_specs(**{GELU: GELU})
    target = tmp_path / "report.json"
    if kind == "directory":
        target.mkdir()
    elif kind == "under-a-file":
        (tmp_path / "file").write_text("")
        target = tmp_path / "file" / "report.json"
    else:
        target.symlink_to(victim(tmp_path))
    proc = run_conformance(specs, f"--conformance-report={target}", timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-2000:]  # a usage error, before collection
    assert "--conformance-report" in out and "Traceback" not in out, out[-2000:]
    assert " passed" not in out and "collected" not in out
