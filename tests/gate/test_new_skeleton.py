"""``python -m conformance new OP_ID --kind elementwise|rows``: the skeleton lints, its golden files match, and
(``--run-packaging``) pytest certifies it, unchanged, with its record installed the way pip would leave it."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from conformance.__main__ import main
from tests.gate.conftest import ROOT


def install_record(root):
    """The record distribution of records/ as ``pip install ./records`` leaves it: its module importable and a
    dist-info with the entry point of its pyproject.toml."""
    meta = tomllib.loads((root / "records" / "pyproject.toml").read_text())["project"]
    site = root / "site"
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n")
    points = meta["entry-points"]["conformance.ops"]
    (info / "entry_points.txt").write_text("[conformance.ops]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "records"), str(site), str(ROOT)])}


def run(root, env, *command) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *command], cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module", params=["elementwise", "rows"])
def skeleton(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"new-{request.param}")
    op = f"com.example.New{request.param.capitalize()}"
    assert main(["new", op, "--kind", request.param, "--dir", str(root)]) == 0
    return root, op, request.param, install_record(root)


def test_it_writes_the_kernel_repository(skeleton):
    root, op, kind, _ = skeleton
    for path in (f"kernels/{op}/manifest.json", f"kernel-cases/{op}.yaml", f"kernel-cases/{op}.digest",
                 "records/pyproject.toml", ".pre-commit-config.yaml", ".github/workflows/kernels.yml", "tox.ini"):
        assert (root / path).is_file(), path
    assert f"structure=\"{kind}\"" in next((root / "records").glob("*.py")).read_text()
    assert "--golden kernel-cases" in (root / ".github" / "workflows" / "kernels.yml").read_text()


def test_it_lints_and_its_golden_files_match(skeleton):
    root, op, _, env = skeleton
    lint = run(root, env, "-m", "conformance", "lint", "kernels", "--no-compile")
    assert lint.returncode == 0 and "lint: 0 error(s)" in lint.stderr, lint.stdout + lint.stderr
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
    assert 'note: ' in out and 'add second = "com_example_second_record:RECORD"' in out
    assert (tmp_path / "kernel-cases" / "com.example.Second.yaml").is_file()


@pytest.mark.packaging
def test_it_certifies(skeleton):
    root, op, _, env = skeleton
    proc = run(root, env, "-m", "pytest", "--pyargs", "conformance", "--device=vulkan", "--specs", "kernels",
               "--golden", "kernel-cases", "-q", "-p", "no:cacheprovider")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert f"cases of {op}: kernel-cases/{op}.yaml" in proc.stdout
    assert " passed" in proc.stdout.splitlines()[-1] and "failed" not in proc.stdout.splitlines()[-1]


def test_the_command_offers_the_kinds_the_skeleton_writes():
    from conformance.cli import new
    from conformance.tools import skeleton
    assert tuple(new.KINDS) == tuple(skeleton.KINDS)
