"""A golden file that lists a call more than once (issue 40, item 11).

``cases --check`` compared calls one to one, keeping the last copy of each: 30 extra copies with ids and seeds of
their own passed the check, and ``certify --golden`` ran them all (147 cases instead of 117). Now both refuse
the file, naming the copies.
"""

from __future__ import annotations

import copy
import shutil

import pytest
import yaml

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import ROOT, run_cli

GELU = "com.microsoft.Gelu"


def pull_request(tmp_path, edit) -> object:
    pr = tmp_path / "pr"
    shutil.copytree(REPO_SPECS / GELU, pr / "kernels" / GELU)
    (pr / "kernel-cases").mkdir()
    shutil.copy(ROOT / "cases" / f"{GELU}.digest", pr / "kernel-cases")
    text = (ROOT / "cases" / f"{GELU}.yaml").read_text()
    header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
    data = yaml.safe_load(text)
    edit(data["cases"])
    data["count"] = len(data["cases"])
    (pr / "kernel-cases" / f"{GELU}.yaml").write_text(header + yaml.safe_dump(data, sort_keys=False, width=1000))
    return pr


def extra_copies(cases: list) -> None:
    for i, case in enumerate(copy.deepcopy(cases[:30])):
        case["id"] += f"#copy{i}"
        if isinstance(case.get("data"), dict):
            case["data"]["seed"] = 1000 + i
        cases.append(case)


def same_id_twice(cases: list) -> None:
    twin = copy.deepcopy(cases[5])
    twin["tunables"] = {"forged": 1}
    cases.append(twin)


@pytest.mark.parametrize(
    "edit, named",
    [(extra_copies, "is the same call as /cases/0"), (same_id_twice, "is listed twice (first at /cases/5)")],
)
def test_cases_check_refuses_a_call_listed_twice(tmp_path, edit, named):
    pr = pull_request(tmp_path, edit)
    proc = run_cli("-P", "-m", "cases", "--check", "--specs", "kernels", "--out", "kernel-cases", cwd=pr)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and named in out and f"{GELU}.yaml" in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


def test_certify_refuses_to_run_the_copies(tmp_path):
    pr = pull_request(tmp_path, extra_copies)
    proc = run_cli(
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
        cwd=pr,
        timeout=400,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "is the same call as /cases/0" in out, out[-3000:]
    assert "147 passed" not in out and "117 passed" not in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
