"""Under ``pytest -n 2``, a worker killed mid-run (SIGKILL, from a plugin at one chosen case) loses no results
of the other worker, and the report lists every case that did not run as ``not-run`` (issue 10)."""

from __future__ import annotations

import json
import textwrap

from tests.hostile.conftest import ROOT, run_conformance

GELU = "com.microsoft.Gelu"
VICTIM = "Gelu/f32/X[8]/vec4@no-f16"

KILLER = textwrap.dedent("""
    import os, signal
    def pytest_runtest_setup(item):
        if os.environ.get("PYTEST_XDIST_WORKER") and item.nodeid.endswith("[" + os.environ["KILL_AT"] + "]"):
            os.kill(os.getpid(), signal.SIGKILL)   # as `kill -9 <worker pid>` would
""")


def test_killing_one_worker_loses_no_other_results_and_reports_what_did_not_run(tmp_path, make_specs):
    specs = make_specs(**{GELU: GELU})
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "kill_worker.py").write_text(KILLER)
    report = tmp_path / "report.json"
    proc = run_conformance(
        specs,
        "-n",
        "2",
        "--max-worker-restart=0",
        "-k",
        "f32 and not nonfinite and not special",
        "-p",
        "kill_worker",
        f"--conformance-report={report}",
        env={"KILL_AT": VICTIM, "PYTHONPATH": f"{ROOT}:{tmp_path / 'plugins'}"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert report.exists(), out[-3000:]
    cases = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    statuses = {i: c["status"] for i, c in cases.items()}
    assert statuses[VICTIM] == "not-run", statuses
    assert "worker" in cases[VICTIM]["detail"], cases[VICTIM]
    passed = [i for i, s in statuses.items() if s == "passed"]
    not_run = [i for i, s in statuses.items() if s == "not-run"]
    assert set(statuses.values()) <= {"passed", "not-run", "skipped"}, statuses  # no result lost or mangled
    summary = [line for line in out.splitlines() if " passed" in line and ("failed" in line or "error" in line)]
    assert summary, out[-1500:]
    n_passed = int(summary[-1].split(" passed")[0].split()[-1])
    assert len(passed) == n_passed, (len(passed), summary[-1])
    assert len(passed) > 20 and not_run, statuses
    print(f"passed {len(passed)}, not-run {len(not_run)}: {not_run[:5]}")
    print(summary[-1])
    md = report.with_suffix(".md").read_text()
    assert "not-run" in md or "not run" in md, md[:2000]


FASTGELU = "com.microsoft.FastGelu"
MATRIX_VICTIM = "FastGelu/f32/X[2,0,4]+bias[4]/scalar_bias"  # a case id with a "+" of its own


def test_a_crashed_case_of_a_matrix_run_is_reported_under_its_column_once(tmp_path, make_specs):
    """``--device=all -n 2 --dist loadgroup`` (node ids then end in ``@<group>``): the crashed case is ``not-run``
    in its own column, every case is listed exactly once per column, the report does not conform, and the crashed
    worker is not replaced (xdist 3.8's loadgroup can hang for ever once it replaces one)."""
    specs = make_specs(**{FASTGELU: FASTGELU})
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "kill_worker.py").write_text(
        KILLER.replace(
            'item.nodeid.endswith("[" + os.environ["KILL_AT"] + "]")',
            '"[" + os.environ["KILL_AT"] + "]" in item.nodeid',
        )
    )
    report = tmp_path / "report.json"
    victim = f"{MATRIX_VICTIM}+wgpu-gl-llvmpipe"
    proc = run_conformance(
        specs,
        "--device=all",
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "-k",
        "f32 and X[2,0,4]",
        "-p",
        "kill_worker",
        f"--conformance-report={report}",
        env={"KILL_AT": victim, "PYTHONPATH": f"{ROOT}:{tmp_path / 'plugins'}"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    data = json.loads(report.read_text())
    columns = {c["column"]: c for c in data["columns"]}
    assert sorted(columns) == ["wgpu-gl-llvmpipe", "wgpu-vulkan-llvmpipe"], sorted(columns)
    assert not data["conforms"] and columns["wgpu-gl-llvmpipe"]["result"] == "does-not-conform"
    ids = {slug: [c["id"] for c in col["cases"]] for slug, col in columns.items()}
    assert all(len(set(v)) == len(v) for v in ids.values()), ids  # never doubled
    assert sorted(ids["wgpu-gl-llvmpipe"]) == sorted(ids["wgpu-vulkan-llvmpipe"])  # never dropped
    lost = next(c for c in columns["wgpu-gl-llvmpipe"]["cases"] if c["id"] == MATRIX_VICTIM)
    assert lost["status"] == "not-run" and "worker" in lost["detail"], lost
    assert "replacing crashed worker" not in out, out[-2000:]
