"""Progress of long work: done / total, failures, the last item and the time left; plain lines (one per tenth)
when the output is not a terminal, one line rewritten in place on a terminal. A stepping clock makes the estimate
exact, so nothing here depends on the machine's speed."""

from __future__ import annotations

import io
import re
import subprocess
import sys

from conformance.engine.package import REPO_SPECS
from conformance.plugin.progress import column_of
from conformance.progress import Progress
from tests.conftest import UNUSED_PLUGINS

ROOT = REPO_SPECS.parent


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plain_lines_once_per_tenth_with_failures_and_time_left():
    out, clock = io.StringIO(), Clock()
    progress = Progress("bench wgpu", 40, stream=out, tty=False, clock=clock)
    for i in range(40):
        clock.now += 2.0
        progress.step(f"call {i}", failed=i == 5)
    lines = out.getvalue().splitlines()
    assert len(lines) == 10, lines
    assert lines[0] == "bench wgpu: 4/40 (10%), ~1m12s left: call 3"
    assert lines[1] == "bench wgpu: 8/40 (20%), 1 failed, ~1m04s left: call 7"
    assert lines[-1] == "bench wgpu: 40/40 (100%), 1 failed: call 39"


def test_a_terminal_line_is_rewritten_in_place_and_ended():
    out = io.StringIO()
    progress = Progress("mutants", 3, stream=out, tty=True, clock=Clock())
    for i in range(3):
        progress.step(f"m{i}")
    text = out.getvalue()
    assert text.count("\r\x1b[K") == 3 and text.endswith("mutants: 3/3 (100%): m2\n") and text.count("\n") == 1


def test_counting_only_prints_nothing():
    out = io.StringIO()
    progress = Progress("mutants", 2, stream=out, echo=False)
    progress.step("a", failed=True)
    assert out.getvalue() == "" and progress.line("a").startswith("mutants: 1/2 (50%), 1 failed")


def test_the_column_of_a_case_is_after_its_last_plus():
    assert (
        column_of("conformance/test_kernels.py::test_case[Gelu/f32/X[8]/vec4+dawn-vulkan-llvmpipe]")
        == "dawn-vulkan-llvmpipe"
    )
    assert column_of("conformance/test_kernels.py::test_case[Gelu/f32/X[8]/vec4]") == ""
    assert column_of("conformance/test_kernels.py::test_case[LayerNormalization/f32/X[2,4]/epsilon=1e+38]") == ""
    assert (
        column_of("conformance/test_kernels.py::test_case[LayerNormalization/f32/X[2,4]/epsilon=1e+38+wgpu-gl]")
        == "wgpu-gl"
    )


def test_a_conformance_run_prints_progress_lines_in_a_log(tmp_path):
    # one package (Gelu) under --specs: the run loads and flags one package, not every package of specs/
    select = ["--specs", str(REPO_SPECS / "com.microsoft.Gelu"), "-k", "Gelu/f32 and X["]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance/",
            "--device=vulkan",
            "-q",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
            *select,
            "--conformance-progress=on",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    passed = int(re.search(r"(\d+) passed", proc.stdout.splitlines()[-1]).group(1))
    assert passed >= 20, proc.stdout[-2000:]  # enough cases for ten tenths
    lines = [line for line in proc.stdout.splitlines() if line.startswith("progress wgpu: ")]
    assert len(lines) == 10 and lines[-1].startswith(f"progress wgpu: {passed}/{passed} (100%)"), proc.stdout[-3000:]
    quiet = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance/",
            "--device=vulkan",
            "-q",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
            *select,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert quiet.returncode == 0 and "progress wgpu" not in quiet.stdout  # auto: off for a short native run
