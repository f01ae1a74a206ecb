"""``pytest conformance/ --specs kernels --golden kernel-cases``: a kernel repository's own golden files are what runs
(digest-checked, as the suite's are), and the summary says which files ran."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from cases.golden import digest_text
from conformance.engine.package import load_package
from tests.conftest import UNUSED_PLUGINS
from tests.gate.conftest import FASTGELU, ROOT

#: Light accepted cases the trimmed golden file keeps: what runs must be exactly these.
KEEP = 3


@pytest.fixture
def repo(tmp_path):
    """kernels/ with FastGelu and kernel-cases/ with its golden file cut to KEEP cases (digest written)."""
    shutil.copytree(ROOT / "specs" / FASTGELU, tmp_path / "kernels" / FASTGELU)
    golden = tmp_path / "kernel-cases"
    golden.mkdir()
    data = yaml.safe_load((ROOT / "cases" / f"{FASTGELU}.yaml").read_text())
    light = [
        c
        for c in data["cases"]
        if c["expect"]["outcome"] == "accepted"
        and not c["heavy"]
        and c["profile"]["name"] == "baseline"
        and "f16" not in c["markers"]
    ]
    data["cases"], data["count"] = light[:KEEP], KEEP
    (golden / f"{FASTGELU}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    package = load_package(tmp_path / "kernels" / FASTGELU)
    (golden / f"{FASTGELU}.digest").write_text(digest_text(package))
    return tmp_path


def conformance(cwd, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "conformance",
            "--device=vulkan",
            "-q",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
            *args,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_golden_runs_the_repositorys_files_and_says_so(repo):
    proc = conformance(repo, "--specs", "kernels", "--golden", "kernel-cases")
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert f"{KEEP} passed" in out.splitlines()[-1], out[-2000:]
    assert f"cases of {FASTGELU}: kernel-cases/{FASTGELU}.yaml ({KEEP} cases, digest matches)" in out


def test_a_stale_golden_file_fails_its_package_with_the_fix(repo):
    (repo / "kernel-cases" / f"{FASTGELU}.digest").write_text("0" * 64 + "\n")
    proc = conformance(repo, "--specs", "kernels", "--golden", "kernel-cases")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "is stale" in proc.stdout and "python -m cases --specs kernels --out kernel-cases" in proc.stdout
    assert "1 failed" in proc.stdout.splitlines()[-1]
