"""A pull request cannot steer the CI run (issue 28, classes 7 and 8): ``python -m conformance certify`` ignores the
checkout's pytest configuration, conftest.py, PYTEST_ADDOPTS and plugins; ``python -m cases`` never imports the
checkout's own ``reference/`` (or, run as documented with ``-P``, its own ``cases/``)."""

from __future__ import annotations

import json
import shutil
import textwrap

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import TEMPLATE, edit, run_cli

GELU = "com.microsoft.Gelu"


def _pull_request(tmp_path):
    """A checkout whose Gelu computes nothing, with a configuration that would hide it from a plain pytest."""
    pr = tmp_path / "pr"
    shutil.copytree(REPO_SPECS / GELU, pr / "kernels" / GELU)
    edit(
        pr / "kernels" / GELU / TEMPLATE,
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count || params.count > 0u) { return; }\n",
    )
    touched = tmp_path / "touched"
    (pr / "conftest.py").write_text(
        textwrap.dedent(f"""
        import pathlib
        pathlib.Path({str(touched)!r}).write_text("conftest")
        import conformance.certify.checker as checker
        checker.Checker.check_values = lambda *args, **kwargs: None   # the value check, off
    """)
    )
    (pr / "pytest.ini").write_text('[pytest]\naddopts = -m "not vec4 and not scalar" -p steer\n')
    (pr / "steer.py").write_text(f"import pathlib\npathlib.Path({str(touched)!r}).write_text('plugin')\n")
    return pr, touched


def test_certify_ignores_the_checkouts_pytest_configuration(tmp_path):
    pr, touched = _pull_request(tmp_path)
    proc = run_cli(
        "-P",
        "-m",
        "conformance",
        "certify",
        "--specs",
        "kernels",
        "--device",
        "vulkan",
        "--report",
        "out/report.json",
        cwd=pr,
        env={"PYTEST_ADDOPTS": "-k nothing_at_all", "PYTEST_PLUGINS": "steer"},
        timeout=400,
    )
    assert not touched.exists(), touched.read_text()  # neither its conftest.py nor its plugin ran
    data = json.loads((pr / "out" / "report.json").read_text())
    variants = {c["variant"] for c in data["cases"]}
    assert {"vec4", "scalar"} <= variants, variants  # nothing deselected
    assert data["totals"]["failed"] > 10 and data["result"] == "does-not-conform", data["totals"]
    assert proc.returncode == 1, proc.stdout[-2000:]


def test_cases_never_imports_the_checkouts_own_packages(tmp_path):
    pr = tmp_path / "pr"
    shutil.copytree(REPO_SPECS / GELU, pr / "kernels" / GELU)
    (pr / "kernel-cases").mkdir()
    for package in ("reference", "cases"):
        (pr / package).mkdir()
        (pr / package / "__init__.py").write_text("import sys\nprint('shadowed')\nsys.exit(0)\n")
    (pr / "cases" / "__main__.py").write_text("")
    check = ("-m", "cases", "--check", "--specs", "kernels", "--out", "kernel-cases")
    (pr / "cases").rename(pr / "cases-off")  # its reference/ only: `python -m cases` as in main's docs
    proc = run_cli(*check, cwd=pr)
    assert "shadowed" not in proc.stdout and proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert GELU in proc.stdout + proc.stderr  # the suite's own check: no golden file for Gelu
    (pr / "cases-off").rename(pr / "cases")  # and its cases/ too: `python -P -m cases`, as documented
    proc = run_cli("-P", *check, cwd=pr)
    assert "shadowed" not in proc.stdout and proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
