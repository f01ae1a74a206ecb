"""The README's kernel repository with its own op records (``records/``), end to end: the record installed as the
README says into a fresh environment, then the CI steps, the tox commands and the local pre-commit hooks as
written; without the record the golden-file check fails naming it.

All of it runs with ``--run-packaging`` (a fresh environment, a pip build of the record, pre-commit installed into
it: about two minutes here); the default run checks the record's part in the golden digest in-process
(tests/ops/test_record_in_package.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap

import pytest
import yaml

from conformance.tools.skeleton import PYPROJECT
from tests.gate.conftest import ROOT, git
from tests.gate.test_kernel_repo import README, ci_job, ci_steps, js_engine, ok, tox_commands, tox_ini
from tests.ops.third_party import RECORD_MODULE, ROLES, write_package

pytestmark = pytest.mark.packaging

OP = "com.example.MulAdd"
SECTION = README.split("**A kernel repository with its own op records.**", 1)[1].split("\n## ", 1)[0]
#: Added to the README's install line: the suite and its dependencies are already there (PYTHONPATH, the system
#: site-packages); pip still builds the record in isolation, as it would in CI
NO_DEPS = ["--no-deps"]


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", SECTION, re.S)


def tox_ini_with_record(record: bool = True) -> str:
    """The README's tox.ini with this section's ``deps`` (its record line dropped unless ``record``)."""
    (deps,) = blocks("ini")
    base = tox_ini()
    plain = next(line for line in base.splitlines() if line.startswith("deps = "))
    lines = deps.rstrip("\n").splitlines()
    assert lines[0] == "deps =" and lines[1].strip() == plain.removeprefix("deps = ")  # one more line of deps
    return base.replace(plain, "\n".join(lines if record else lines[:2]))


def ci_job_with_record() -> str:
    """The README's kernel-repository job with this section's install step right after the suite's."""
    (step,) = [b for b in blocks("yaml") if b.lstrip().startswith("- run: pip install ./records")]
    suite = next(
        line for line in ci_job().splitlines(keepends=True) if 'pip install "webgpu-kernel-conformance' in line
    )
    return ci_job().replace(suite, suite + step)


def run(cwd, command, env_dir=None, extra_env=None) -> subprocess.CompletedProcess:
    """``command`` through bash in ``cwd``; with ``env_dir`` that environment's bin/ first on PATH (its python)."""
    path = os.environ.get("PATH", "")
    path = f"{env_dir / 'bin'}{os.pathsep}{path}" if env_dir else f"{os.path.dirname(sys.executable)}{os.pathsep}{path}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": path, **js_engine(), **(extra_env or {})}
    line = command if isinstance(command, str) else shlex.join(command)
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """(a clone on branch main of a kernel repository holding com.example.MulAdd in kernels/, its record in
    records/ and its golden files written with the record installed, the environment the record is installed in)."""
    tmp = tmp_path_factory.mktemp("records-repo")
    seed = tmp / "seed"
    write_package(seed / "kernels", "MulAdd", 3)
    (seed / "records").mkdir()
    (seed / "records" / "pyproject.toml").write_text(
        PYPROJECT.format(op=OP, dist="example-ops", entry="muladd", module="example_ops")
    )
    (seed / "records" / "example_ops.py").write_text(
        textwrap.dedent(RECORD_MODULE.format(name="MulAdd", roles=tuple(ROLES[:3])))
    )
    (seed / ".pre-commit-config.yaml").write_text(blocks("yaml")[1])
    env = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env)], check=True)
    install = blocks("yaml")[0].strip().removeprefix("- run: ")
    assert install == "pip install ./records"
    ok(run(seed, shlex.split(install) + NO_DEPS, env))
    first = re.search(r"\(written\s+by `(mkdir -p kernel-cases && python -m cases[^`]*)`\)", README).group(1)
    ok(run(seed, first, env))
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "kernels and their record")
    bare = tmp / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    work = tmp / "work"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True)
    return work, env


def test_golden_files_name_the_installed_record(repo):
    work, _ = repo
    sidecar = (work / "kernel-cases" / f"{OP}.digest").read_text().splitlines()
    assert sidecar[1].startswith(f"record: {OP} structure=elementwise data=none sha256=")
    assert sidecar[1].endswith("(distribution example-ops 0.1)")


def test_ci_steps_and_tox_commands_pass_with_the_record_installed(repo):
    work, env = repo
    assert "-e {toxinidir}/records" in blocks("ini")[0]  # tox: the record installed beside the suite
    assert ci_steps() == tox_commands()
    for step in ci_steps():
        if " certify " not in step:  # the conformance step: its own test below
            proc = ok(run(work, step, env))
            assert "no op record" not in proc.stderr
            if " lint " in step:  # with --require-js: the portable-subset check ran, and passed
                assert "com.example.MulAdd: 9 template contexts" in proc.stderr, proc.stderr[-2000:]
                assert "checked against @huggingface/jinja 0.5.11" in proc.stderr, proc.stderr[-2000:]


def test_without_the_record_the_check_fails_naming_it(repo):
    work, _ = repo
    check = next(s for s in ci_steps() if "--check" in s)
    proc = run(work, check)  # the suite's own environment: the author's record is not installed there
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"warning: {OP}: no op record: values will not be checked" in proc.stderr
    assert f"written with another op record ({OP} structure=elementwise" in proc.stderr
    assert f"now none for {OP}" in proc.stderr


def test_ci_conformance_step_runs_the_golden_files(repo):
    work, env = repo
    step = next(s for s in ci_steps() if " certify " in s and "--golden kernel-cases" in s)
    proc = ok(run(work, step, env))
    golden = re.escape(str(work / "kernel-cases" / f"{OP}.yaml"))  # certify names the file it loaded, absolute
    assert re.search(rf"cases of {OP}: {golden} \((\d+) cases, digest matches\)", proc.stdout), proc.stdout[-3000:]
    assert re.search(r"\b\d{2,} passed", proc.stdout.splitlines()[-1]), proc.stdout[-3000:]
    report = json.loads((work / "out" / "kernels.json").read_text())
    assert report["result"] == "conforms" and report["totals"]["failed"] == 0, report["totals"]


def test_pre_commit_runs_the_local_hooks(repo, tmp_path):
    """A real pre-commit (installed into the record's environment) runs the README's local hooks."""
    work, env = repo
    ok(run(work, ["pip", "install", "-q", "pre-commit"], env))
    hooks = yaml.safe_load(blocks("yaml")[1])["repos"][0]["hooks"]
    assert {h["id"] for h in hooks} == {"conformance-lint", "conformance-cases-check"}
    proc = run(work, ["pre-commit", "run", "--all-files"], env, {"PRE_COMMIT_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("Passed") == 2
