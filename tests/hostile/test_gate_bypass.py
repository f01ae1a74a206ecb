"""``diff REF --gate`` against a change that plants files to fool it (issue 11, items 1 and 11)."""

from __future__ import annotations

import shutil

from conformance.__main__ import main
from tests.gate.conftest import FASTGELU, edit_manifest, git, repo  # noqa: F401  (the ``repo`` fixture)
from tests.gate.test_diff import swap_tail_and_scalar
from tests.hostile.conftest import run_cli


def test_a_directory_named_like_the_base_revision_is_refused_not_compared(repo, monkeypatch, capsys):  # noqa: F811
    git(repo, "branch", "-q", "base")
    edit_manifest(repo / "specs" / FASTGELU, swap_tail_and_scalar)  # a behaviour change, golden file untouched
    shutil.copytree(repo / "specs" / FASTGELU, repo / "base" / FASTGELU)  # the PR's decoy: base/<package>/
    monkeypatch.chdir(repo)
    assert main(["diff", "base", "--gate"]) == 2
    err = capsys.readouterr().err
    assert "'base' is ambiguous" in err and "git revision" in err
    # with the decoy gone, the revision is used and the unacknowledged change fails the gate
    shutil.rmtree(repo / "base")
    assert main(["diff", "base", "--gate"]) == 1
    assert "unacknowledged" in capsys.readouterr().out


def test_a_directory_is_still_a_directory_when_no_revision_has_its_name(repo, tmp_path, monkeypatch):  # noqa: F811
    shutil.copytree(repo / "specs" / FASTGELU, tmp_path / "old" / FASTGELU)
    monkeypatch.chdir(tmp_path)
    assert main(["diff", "old", str(repo / "specs"), "--repo", str(repo)]) == 0


def test_a_revision_with_an_outward_symlink_is_refused_with_a_message(repo, capsys):  # noqa: F811
    (repo / "specs" / FASTGELU / "notes.txt").symlink_to("/etc/passwd")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "outward link")
    assert main(["diff", "HEAD", "--repo", str(repo)]) == 2
    err = capsys.readouterr().err
    assert "refusing to extract" in err and "notes.txt" in err, err


def test_python_m_conformance_diff_in_a_repository_with_its_own_cases_package(repo):  # noqa: F811
    (repo / "cases" / "__init__.py").write_text("raise ImportError('the repository cases/ shadowed the suite')\n")
    proc = run_cli("-m", "conformance", "diff", "HEAD", cwd=repo, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "no change" in proc.stderr


def test_two_revisions_whose_names_look_alike_are_extracted_apart(repo, monkeypatch, capsys):  # noqa: F811
    """``a/b`` and ``a_b`` (like ``HEAD~2`` and ``HEAD^2``) once shared a scratch folder: the gate compared a
    revision with itself, and a behaviour change passed (issue 28, class 10)."""
    git(repo, "branch", "-q", "a/b")
    edit_manifest(repo / "specs" / FASTGELU, swap_tail_and_scalar)  # a behaviour change, golden file untouched
    git(repo, "commit", "-qam", "behaviour change")
    git(repo, "branch", "-q", "a_b")
    monkeypatch.chdir(repo)
    assert main(["diff", "a/b", "a_b", "--gate"]) == 1
    assert "unacknowledged" in capsys.readouterr().out
