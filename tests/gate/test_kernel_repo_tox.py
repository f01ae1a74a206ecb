"""The README's tox recipe for a kernel repository with its own op record, run by real tox: its ``[tox]`` and
``[testenv:kernels]`` block with the records section's ``deps``, as written, in the kernel repository of
tests/gate/test_kernel_repo_records.py (com.example.MulAdd in ``kernels/``, its record in ``records/``). Only the
placeholder ``git+https://github.com/<org>/webgpu-kernel-conformance`` is replaced, by a copy of this work tree
(uncommitted changes are what tox installs). Without the record's ``deps`` line tox fails naming the record.

``--run-packaging``: tox builds two environments, each installing the suite from source and the record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.certify.test_wheel import IGNORED
from tests.gate.conftest import ROOT
from tests.gate.test_kernel_repo import js_engine, tox_commands
from tests.gate.test_kernel_repo_records import OP, repo, tox_ini_with_record  # noqa: F401  (repo: the fixture)

pytestmark = pytest.mark.packaging

PLACEHOLDER = "git+https://github.com/<org>/webgpu-kernel-conformance"
#: The one setting added to the README's recipe. The environment tox creates sees the interpreter's own
#: site-packages, so pip finds wgpu, numpy, jinja2... already installed and builds only the suite and the record
#: (no download of the heavy dependencies: fast, and it works without an index). A ``.pth`` naming them, as
#: tests/certify/test_wheel.py writes, cannot be placed here: tox creates (and on a change recreates) the
#: environment itself, and installs the ``deps`` before any command of the recipe could write one. Caveat: run from
#: a virtual environment, virtualenv links the base interpreter's site-packages instead, and pip then installs the
#: dependencies from the index (slower, same verdicts).
SYSTEM_SITE = ["--override", "testenv:kernels.system_site_packages=true"]
#: 162 MB of npm packages the wheel does not ship (the checkout's node_modules/, a link in a worktree)
NOT_COPIED = {"node_modules"}


def readme_ini(suite: str, record: bool = True) -> str:
    """The README's tox.ini with the records section's ``deps`` (its record line dropped unless ``record``),
    the suite's placeholder replaced by the requirement ``suite``."""
    ini = tox_ini_with_record(record)
    assert ini.count(PLACEHOLDER) == 1, ini
    return ini.replace(PLACEHOLDER, suite)


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> str:
    """The URL of a copy of this work tree as it is (what pip builds the suite from)."""
    if subprocess.run([sys.executable, "-c", "import tox"]).returncode:
        pytest.fail("tox is not installed: pip install -e '.[test]' (scripts/setup.sh)")
    source = tmp_path_factory.mktemp("suite") / "source"
    shutil.copytree(ROOT, source, ignore=lambda d, names: IGNORED(d, names) | (NOT_COPIED & set(names)))
    return f"file://{source}"


def outside_env() -> dict[str, str]:
    """This environment as a kernel repository's CI has it: nothing of this checkout on PYTHONPATH, GATE_BASE unset
    (the recipe's default, origin/main), ``CONFORMANCE_JINJA_JS`` naming the pinned engine (the job's npm step; the
    installed suite has no node_modules/ around it, so lint --require-js fails without it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GATE_BASE", "CONFORMANCE_JINJA_JS")}
    return {**env, **js_engine()}


def tox(work, ini: str, name: str, workdir: str = ".tox") -> tuple[subprocess.CompletedProcess, float]:
    """Real tox in the kernel repository ``work`` with ``ini`` as its configuration file ``name``: (the run, its
    wall seconds)."""
    (work / name).write_text(ini)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tox", "-c", name, "--workdir", workdir, *SYSTEM_SITE],
        cwd=work,
        env=outside_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1200,
    )
    return proc, time.perf_counter() - start


def test_tox_runs_the_readme_recipe_with_the_record(repo, suite):
    work, _ = repo
    proc, seconds = tox(work, readme_ini(suite), "tox.ini")
    out = proc.stdout
    assert proc.returncode == 0, out[-5000:]
    for i, command in enumerate(tox_commands()):  # each of the four, in order, as the README writes it
        assert f"kernels: commands[{i}]> {command}" in out, (command, out[-5000:])
    assert "values will not be checked" not in out and "no op record" not in out, out[-5000:]
    assert "lint: 0 error(s) in kernels" in out and f"{OP}: up to date" in out, out[-5000:]
    assert "checked against @huggingface/jinja 0.5.11" in out, out[-5000:]  # --require-js: the check ran
    assert re.search(rf"{OP}: 0 of [1-9]\d* calls change", out), out[-5000:]  # the gate: nothing since origin/main
    assert re.search(rf"cases of {OP}: \S+/kernel-cases/{OP}\.yaml \(\d+ cases, digest matches\)", out), out[-5000:]
    python = work / ".tox" / "kernels" / "bin" / "python"
    probe = (
        "import conformance, json; from importlib.metadata import distribution; "
        "print(json.dumps([conformance.__file__, json.loads(distribution('example-ops').read_text("
        "'direct_url.json'))]))"
    )
    where, record = json.loads(
        subprocess.run(
            [str(python), "-P", "-c", probe], cwd=work, env=outside_env(), capture_output=True, text=True, check=True
        ).stdout
    )
    assert where.startswith(str(work / ".tox" / "kernels")), where  # the suite tox installed, not a checkout
    assert record == {"url": f"file://{work / 'records'}", "dir_info": {"editable": True}}, record
    report = json.loads((work / "out" / "kernels.json").read_text())
    assert report["result"] == "conforms" and report["totals"]["failed"] == 0, report["totals"]
    print(f"\ntox (the README's recipe, the record installed): {report['totals']['passed']} passed, {seconds:.0f}s")


def test_without_the_record_line_tox_fails_naming_the_record(repo, suite):
    work, _ = repo
    ini = readme_ini(suite, record=False)
    assert "{toxinidir}/records" not in ini
    proc, seconds = tox(work, ini, "tox-no-record.ini", ".tox-no-record")
    out = proc.stdout
    assert proc.returncode != 0, out[-5000:]
    check = tox_commands()[1]
    assert "--check" in check and f"kernels: commands[1]> {check}" in out and "commands[2]>" not in out, out[-5000:]
    assert f"warning: {OP}: no op record: values will not be checked" in out, out[-5000:]
    assert f"written with another op record ({OP} structure=elementwise" in out, out[-5000:]
    assert f"now none for {OP}" in out, out[-5000:]
    print(f"\ntox without the record's deps line: failed at the golden-file check, {seconds:.0f}s")
