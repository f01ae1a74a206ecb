"""``python -m conformance new OP_ID --kind elementwise|rows``: the skeleton lints, its golden files match, and
(``--run-packaging``) its own certify command passes, unchanged, with its record installed the way pip would leave
it; its tox, CI and pre-commit files are the README's recipes."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import tomllib

from conformance.__main__ import main
from conformance.tools import skeleton as written
from tests.gate.conftest import ROOT
from tests.gate.test_kernel_repo import js_engine
from tests.gate.test_kernel_repo_records import blocks, ci_job_with_record, tox_ini_with_record


def install_record(root, venv):
    """(python, env): a virtual environment ``venv`` (the interpreter's site-packages visible) holding the record
    distribution of records/ as ``pip install -e ./records`` leaves it: a ``.pth`` naming records/ and a dist-info
    with the entry point of its pyproject.toml. In site-packages, not on PYTHONPATH: ``certify`` runs pytest in
    isolated mode (``python -I``), which ignores PYTHONPATH, as it would a kernel repository's own modules."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = pathlib.Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    meta = tomllib.loads((root / "records" / "pyproject.toml").read_text())["project"]
    (site / "records.pth").write_text(f"{root / 'records'}\n")
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n")
    points = meta["entry-points"]["conformance.ops"]
    (info / "entry_points.txt").write_text("[conformance.ops]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    return python, {**os.environ, "PYTHONPATH": str(ROOT), **js_engine()}


def run(root, installed, *command) -> subprocess.CompletedProcess:
    python, env = installed
    return subprocess.run([str(python), *command], cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module", params=["elementwise", "rows"])
def skeleton(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"new-{request.param}")
    op = f"com.example.New{request.param.capitalize()}"
    assert main(["new", op, "--kind", request.param, "--dir", str(root)]) == 0
    return root, op, request.param, install_record(root, tmp_path_factory.mktemp(f"venv-{request.param}"))


def test_it_writes_the_kernel_repository(skeleton):
    root, op, kind, _ = skeleton
    for path in (
        f"kernels/{op}/manifest.json",
        f"kernel-cases/{op}.yaml",
        f"kernel-cases/{op}.digest",
        "records/pyproject.toml",
        ".pre-commit-config.yaml",
        ".github/workflows/kernels.yml",
        "tox.ini",
    ):
        assert (root / path).is_file(), path
    assert f'structure="{kind}"' in next((root / "records").glob("*.py")).read_text()
    assert "--golden kernel-cases" in (root / ".github" / "workflows" / "kernels.yml").read_text()


def test_it_lints_and_its_golden_files_match(skeleton):
    root, op, _, env = skeleton
    lint = run(root, env, "-m", "conformance", "lint", "kernels", "--no-compile", "--require-js")
    assert lint.returncode == 0 and "lint: 0 error(s)" in lint.stderr, lint.stdout + lint.stderr
    assert "checked against @huggingface/jinja" in lint.stderr  # portable: a JavaScript loader reads it alike
    assert "no op record" not in lint.stderr
    check = run(root, env, "-m", "cases", "--specs", "kernels", "--out", "kernel-cases", "--check")
    assert check.returncode == 0 and f"{op}: up to date" in check.stdout, check.stdout + check.stderr


def test_a_second_new_of_the_same_op_is_refused(skeleton, capsys):
    root, op, kind, _ = skeleton
    assert main(["new", op, "--kind", kind, "--dir", str(root)]) == 2
    assert "exists: `new` writes a new package only" in capsys.readouterr().err


def test_a_second_op_in_the_repository_keeps_its_files_and_says_what_to_add(tmp_path, capsys):
    assert main(["new", "com.example.First", "--kind", "elementwise", "--dir", str(tmp_path)]) == 0
    pyproject = (tmp_path / "records" / "pyproject.toml").read_text()
    capsys.readouterr()
    assert main(["new", "com.example.Second", "--kind", "rows", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "records" / "pyproject.toml").read_text() == pyproject
    assert "note: " in out and 'add second = "com_example_second_record:RECORD"' in out
    assert (tmp_path / "kernel-cases" / "com.example.Second.yaml").is_file()


def test_its_tox_ci_and_hooks_are_the_readmes():
    """The skeleton's tox.ini, CI job and pre-commit config are the README's recipes with the record installed,
    character for character (the README is the source: a change there fails here until the skeleton follows)."""
    assert written.TOX == tox_ini_with_record()
    assert written.WORKFLOW == ci_job_with_record()
    hooks = "".join(line for line in written.PRE_COMMIT.splitlines(keepends=True) if not line.startswith("#"))
    assert hooks == blocks("yaml")[1]


@pytest.mark.packaging
def test_it_certifies(skeleton):
    """The certify command of its own tox.ini (the CI job's same step), as written."""
    root, op, _, env = skeleton
    command = (root / "tox.ini").read_text().strip().splitlines()[-1].split()
    assert command[:4] == ["python", "-P", "-m", "conformance"] and "certify" in command, command
    proc = run(root, env, *command[1:])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert f"cases of {op}: {root / 'kernel-cases' / op}.yaml" in proc.stdout, proc.stdout[-3000:]
    assert " passed" in proc.stdout.splitlines()[-1] and "failed" not in proc.stdout.splitlines()[-1]


def test_the_command_offers_the_kinds_the_skeleton_writes():
    from conformance.cli import new
    from conformance.tools import skeleton

    assert tuple(new.KINDS) == tuple(skeleton.KINDS)
