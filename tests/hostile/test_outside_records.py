"""A pull request's op records (issue 40, item 2): CI installs its ``records/``, so they are its code.

An entry point registering a shipped op (``com.microsoft.Gelu`` with a reference of zeros) used to replace the
built-in record without a word; now every command refuses it, naming both. And a changed outside record shows in
the gate's diff like a changed manifest: the gate fails until the golden files are regenerated with it, and the
diff then still shows the record's change to the reviewer.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import ROOT, run_cli

GELU = "com.microsoft.Gelu"
ZEROS = textwrap.dedent("""
    import dataclasses
    import numpy as np
    from conformance.ops import builtin
    _gelu = next(r for r in builtin.RECORDS if r.op == "com.microsoft.Gelu")
    RECORD = dataclasses.replace(_gelu, compute=lambda inputs, attributes=None: {
        "Y": np.zeros(np.shape(inputs["X"]))})
""")


def distribution(site, module: str, source: str, entry: str = "RECORD"):
    """``module`` with ``source`` and a dist-info whose ``conformance.ops`` entry point names ``module:entry``."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[conformance.ops]\n{module} = {module}:{entry}\n")
    return site


def refuses_replacing_gelu(proc) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "distribution pr-records 0.1" in out and f"registers an op record for {GELU}" in out, out[-3000:]
    assert "built-in record (conformance.ops.builtin)" in out and "Traceback" not in out, out[-3000:]
    assert "conforms" not in out.replace("does not conform", ""), out[-3000:]


@pytest.fixture
def pr_replacing_gelu(tmp_path):
    pr = tmp_path / "pr"
    shutil.copytree(REPO_SPECS / GELU, pr / "kernels" / GELU)
    shutil.copytree(
        ROOT / "cases", pr / "kernel-cases", ignore=lambda d, names: [n for n in names if not n.startswith(f"{GELU}.")]
    )
    site = distribution(tmp_path / "site", "pr_records", ZEROS)
    return pr, site


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "cases", "--check", "--specs", "kernels", "--out", "kernel-cases"],
        ["-m", "conformance", "lint", "kernels"],
    ],
)
def test_an_outside_record_never_replaces_a_built_in_one(pr_replacing_gelu, command):
    pr, site = pr_replacing_gelu
    refuses_replacing_gelu(run_cli("-P", *command, cwd=pr, env={"PYTHONPATH": f"{ROOT}:{site}"}))


def test_certify_refuses_it_too(pr_replacing_gelu, tmp_path):
    """Installed as CI installs ``records/``: into the environment's site-packages, which certify's isolated
    pytest (``python -I``) sees."""
    pr, site = pr_replacing_gelu
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    (packages,) = venv.glob("lib/python*/site-packages")
    for item in site.iterdir():
        shutil.move(str(item), packages / item.name)
    (packages / "suite.pth").write_text(f"{ROOT}\n")  # the suite under test, as `pip install -e` would
    proc = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-P",
            "-m",
            "conformance",
            "certify",
            "--specs",
            "kernels",
            "--golden",
            "kernel-cases",
            "--device",
            "vulkan",
            "--report",
            "out/report.json",
        ],
        cwd=pr,
        capture_output=True,
        text=True,
        timeout=400,
    )
    refuses_replacing_gelu(proc)


def test_two_outside_records_of_one_op_are_refused_naming_both(tmp_path):
    skeleton = tmp_path / "repo"
    run_cli("-P", "-m", "conformance", "new", "com.example.Silu", "--kind", "elementwise", "--dir", str(skeleton))
    module = (skeleton / "records" / "com_example_silu_record.py").read_text()
    site = distribution(tmp_path / "site", "silu_a", module)
    distribution(site, "silu_b", module)
    proc = run_cli("-P", "-m", "conformance", "lint", "kernels", cwd=skeleton, env={"PYTHONPATH": f"{ROOT}:{site}"})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "both register an op record for com.example.Silu" in out, out[-3000:]
    assert "distribution silu-a 0.1" in out and "distribution silu-b 0.1" in out and "Traceback" not in out


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_changed_record_shows_in_the_gate_like_a_changed_manifest(tmp_path):
    repo = tmp_path / "repo"
    assert (
        run_cli(
            "-P", "-m", "conformance", "new", "com.example.Silu", "--kind", "elementwise", "--dir", str(repo)
        ).returncode
        == 0
    )
    records = repo / "records" / "com_example_silu_record.py"
    site = distribution(tmp_path / "site", "silu_records", "from com_example_silu_record import RECORD\n")
    env = {"PYTHONPATH": f"{ROOT}:{site}:{repo / 'records'}"}
    regenerate = ("-P", "-m", "cases", "--specs", "kernels", "--out", "kernel-cases")
    assert run_cli(*regenerate, cwd=repo, env=env).returncode == 0  # written with the installed record
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    gate = (
        "-P",
        "-m",
        "conformance",
        "diff",
        "HEAD",
        "--gate",
        "--specs-path",
        "kernels",
        "--golden-path",
        "kernel-cases",
    )
    proc = run_cli(*gate, cwd=repo, env=env)
    assert proc.returncode == 0 and "op record" not in proc.stdout, proc.stdout + proc.stderr

    head = "def compute(inputs, attributes=None):\n"
    text = records.read_text()
    assert head in text
    records.write_text(
        text.replace(
            head,
            head + "    return {'Y': np.zeros(np.shape(inputs['X']))}\n\n\ndef compute_was(inputs, attributes=None):\n",
            1,
        )
    )  # a reference of zeros
    proc = run_cli(*gate, cwd=repo, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "unacknowledged: com.example.Silu: its op record changed" in out and "op record was:" in out, out[-3000:]
    assert run_cli(*regenerate, cwd=repo, env=env).returncode == 0  # the golden files, with the new record
    proc = run_cli(*gate, cwd=repo, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "op record was:" in out and "op record now:" in out, out[-3000:]
    assert "Traceback" not in out
