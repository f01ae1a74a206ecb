"""Issue 41, item 11: what the documentation said that was not so, checked against what the code does."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from conformance.certify.report import check_paths
from conformance.gpu.backends import IMPLEMENTATIONS
from tests.conftest import UNUSED_PLUGINS
from tests.docs import ROOT, manual

WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def test_the_object_model_sentence_counts_the_implementations():
    text = manual()
    stated = re.findall(r"All (\w+) sit behind one object model", text)
    assert stated == [WORDS[len(IMPLEMENTATIONS)]], (stated, sorted(IMPLEMENTATIONS))


def test_the_served_columns_reports_are_named_as_written(tmp_path):
    assert [p.suffix for p in check_paths(tmp_path / "column.json")] == [".json", ".md", ".html"]
    assert "Each column writes `DIR/<browser>-<page>.json`, `.md`\nand `.html`" in manual()
    assert "in the\nterminal, with the report's path, when the server exits" in manual()


def test_a_copy_of_a_shipped_package_runs_its_golden_file_as_written(tmp_path):
    """ "Without --golden the cases of other packages are generated" was not so for a copy of Gelu outside specs/:
    its digest matches the suite's golden file, which it runs (and the summary says so)."""
    shutil.copytree(ROOT / "specs" / "com.microsoft.Gelu", tmp_path / "kernels" / "com.microsoft.Gelu")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance/",
            f"--specs={tmp_path / 'kernels'}",
            "--device=vulkan",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
            "-q",
            "-k",
            "f64",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "cases of com.microsoft.Gelu: cases/com.microsoft.Gelu.yaml (" in proc.stdout, proc.stdout[-2000:]
    assert "digest matches)" in proc.stdout
    assert (
        "a copy of a shipped package, such as Gelu copied outside `specs/`, runs `cases/com.microsoft.Gelu.yaml`"
        in " ".join(manual().split()).replace("\n", " ")
    )
