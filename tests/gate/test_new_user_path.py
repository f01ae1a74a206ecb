"""Issue 41, item 10 and its Done-when: a new author's path from the scaffold to the CI gate, with the suite
installed from a release tag of this repository, as the generated files say.

``conformance new --suite-url URL`` writes tox.ini and the CI job installing the suite from URL pinned to this
version's tag (``@v<version>``, the version written once, in ``conformance.__version__``); without it they keep
the README's placeholder and ``new`` says what to replace. With ``--run-packaging``: a clone of this repository
tagged ``v<version>`` (a local ``git+file://`` one: nothing is pushed), the suite pip-installed from the tag into
a fresh environment exactly as the generated tox.ini names it, the record as the job installs it, then the job's
suite steps (lint, golden check, gate, certify) through bash, as written, with no PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest
import tomllib
import yaml

import conformance
from conformance.__main__ import main
from conformance.tools.skeleton import PLACEHOLDER_URL
from tests.certify.test_wheel import active_site_packages
from tests.gate.conftest import ROOT, git
from tests.gate.test_kernel_repo import js_engine

OP = "com.example.Silu"


def test_the_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "conformance.__version__"}
    assert conformance.__version__.count(".") == 2


def test_suite_url_fills_tox_and_ci_pinned_to_the_release_tag(tmp_path, capsys):
    url = "git+https://github.com/acme/webgpu-kernel-conformance"
    assert main(["new", OP, "--kind", "elementwise", "--dir", str(tmp_path), "--suite-url", url]) == 0
    pinned = f"webgpu-kernel-conformance @ {url}@v{conformance.__version__}"
    assert pinned in (tmp_path / "tox.ini").read_text()
    assert f'pip install "{pinned}"' in (tmp_path / ".github" / "workflows" / "kernels.yml").read_text()
    for name in ("tox.ini", ".github/workflows/kernels.yml"):
        assert "<org>" not in (tmp_path / name).read_text()
    assert "replace <org>" not in capsys.readouterr().out


def test_without_suite_url_new_says_what_to_replace(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CONFORMANCE_SUITE_URL", raising=False)
    assert main(["new", OP, "--kind", "elementwise", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert PLACEHOLDER_URL in (tmp_path / "tox.ini").read_text()
    assert (
        f"note: {tmp_path / 'tox.ini'} and {tmp_path / '.github' / 'workflows' / 'kernels.yml'} install the "
        f"suite from {PLACEHOLDER_URL}: replace <org>"
        in out
        and "--suite-url URL" in out
    ), out


def test_a_suite_url_that_is_no_pip_url_is_refused_before_anything_is_written(tmp_path, capsys):
    assert main(["new", OP, "--kind", "elementwise", "--dir", str(tmp_path), "--suite-url", "x\n  - run: evil"]) == 2
    assert "--suite-url 'x\\n  - run: evil': expected the URL pip installs the suite from" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_skeleton_ignores_what_the_commands_write(tmp_path):
    assert main(["new", OP, "--kind", "elementwise", "--dir", str(tmp_path)]) == 0
    git(tmp_path, "init", "-q")
    for written in ("out/kernels.json", "records/__pycache__/x.pyc", "records/x.egg-info/PKG-INFO", ".tox/x"):
        (tmp_path / written).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / written).write_text("")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "out/" not in status and "__pycache__" not in status and ".tox" not in status and "egg-info" not in status
    assert ".gitignore" in status and "kernels/" in status


def _bash(cwd, line, env) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{line}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.packaging
def test_scaffold_to_ci_gate_with_the_suite_from_a_tag(tmp_path):
    suite = tmp_path / "suite"  # this repository, tagged as a release would be
    subprocess.run(["git", "clone", "-q", str(ROOT), str(suite)], check=True)
    tag = f"v{conformance.__version__}"
    git(suite, "tag", tag)
    seed = tmp_path / "seed"
    assert main(["new", OP, "--kind", "elementwise", "--dir", str(seed), "--suite-url", f"git+file://{suite}"]) == 0
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "scaffold")
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git")], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "origin.git"), str(work)], check=True)

    env_dir = tmp_path / "venv"  # a fresh environment (it sees wgpu, numpy...)
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    own_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(own_site, "active-environment.pth").write_text("\n".join(active_site_packages()) + "\n")
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        **js_engine(),
        "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    deps = (work / "tox.ini").read_text().split("deps =\n", 1)[1].splitlines()[0].strip()
    assert deps == f"webgpu-kernel-conformance @ git+file://localhost{suite}@{tag}", deps
    offline = "--no-deps -q"  # the dependencies are there already
    _bash(work, f"python -m pip install {offline} '{deps}'", env)
    probe = _bash(
        tmp_path, "python -c 'import conformance; print(conformance.__file__); print(conformance.__version__)'", env
    ).stdout.split()
    assert probe[0].startswith(own_site) and probe[1] == conformance.__version__, probe  # the tag's copy
    steps = [
        s["run"]
        for s in yaml.safe_load((work / ".github" / "workflows" / "kernels.yml").read_text())["jobs"]["kernels"][
            "steps"
        ]
        if "run" in s
    ]
    assert "pip install ./records" in steps
    _bash(work, f"python -m pip install {offline} ./records", env)
    suite_steps = [s.replace("${{ github.base_ref || 'main' }}", "main") for s in steps if s.startswith("python -P")]
    assert [" lint ", " cases ", " diff ", " certify "] == [
        w for s, w in zip(suite_steps, (" lint ", " cases ", " diff ", " certify ")) if w in s
    ], suite_steps
    for step in suite_steps:
        proc = _bash(work, step, env)
        assert "no op record" not in proc.stderr, proc.stderr[-2000:]
    report = (work / "out" / "kernels.json").read_text()
    assert '"result": "conforms"' in report
