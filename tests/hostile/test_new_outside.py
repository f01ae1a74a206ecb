"""``conformance new`` in a repository a stranger prepared (issue 40, item 14): a symlinked ``kernels/`` (or
``.github/``, ``records/``) used to get a folder made through it, outside the repository, before the refusal; a
300-character op id ended in an OSError traceback (a file name over 255 bytes)."""

from __future__ import annotations

import pytest

from tests.hostile.conftest import run_cli


@pytest.mark.parametrize("linked", ["kernels", "records", ".github", "kernel-cases"])
def test_a_linked_folder_is_refused_before_anything_is_made(tmp_path, linked):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / linked).symlink_to(outside)
    proc = run_cli("-P", "-m", "conformance", "new", "com.example.Silu", "--kind", "elementwise", cwd=repo)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "refusing a path through a symlink" in out and linked in out, out[-2000:]
    assert "Traceback" not in out
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in repo.iterdir()) == [linked]  # nothing written anywhere


def test_an_op_id_too_long_for_a_file_name_is_one_clear_error(tmp_path):
    op = "com.example." + "A" * 300
    proc = run_cli("-P", "-m", "conformance", "new", op, "--kind", "rows", cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "at most 100 characters" in out and "Traceback" not in out, out[-2000:]
    assert list(tmp_path.iterdir()) == []
