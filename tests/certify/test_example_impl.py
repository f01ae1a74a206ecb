"""The README's example implementation, installed as a distribution (an entry point) and certified by the suite."""

import json
import os
import re
import shutil

import pytest

from conformance.certify.implementations import load_implementation
from tests.certify.conftest import REPO, run_conformance
from tests.docs import manual

EXAMPLE = REPO / "docs" / "examples" / "numpy_gelu.py"


def test_readme_shows_the_example_whole():
    readme = manual()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert EXAMPLE.read_text() in blocks
    for field in ("id", "package", "family", "inputs", "profile", "tunables", "data", "expect", "heavy", "markers"):
        assert f"| `{field}` |" in readme


@pytest.fixture
def site(tmp_path):
    """A directory on PYTHONPATH holding the example and the metadata of a distribution that registers it,
    as ``pip install`` of a package with the README's entry point would leave them."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(EXAMPLE, site / "numpy_gelu.py")
    dist = site / "numpy_gelu-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy-gelu\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[conformance.implementations]\nnumpy-gelu = numpy_gelu:NumpyGelu\n")
    return site


def test_module_factory_form_loads_without_registering(site, monkeypatch):
    monkeypatch.syspath_prepend(str(site))
    impl = load_implementation("numpy_gelu:NumpyGelu")
    assert impl.name == "numpy-gelu" and impl.available() is None


@pytest.mark.slow
def test_example_is_certified_through_its_entry_point(site, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")]))
    report, specs = tmp_path / "numpy-gelu.json", tmp_path / "specs"
    for name in ("com.microsoft.Gelu", "com.microsoft.FastGelu"):  # its op, and one it must skip
        shutil.copytree(REPO / "specs" / name, specs / name)
    proc = run_conformance("--impl=numpy-gelu", f"--specs={specs}", f"--conformance-report={report}", "-k", "not heavy")
    data = json.loads(report.read_text())
    gelu = [c for c in data["cases"] if c["package"] == "com.microsoft.Gelu"]
    fast = [c for c in data["cases"] if c["package"] == "com.microsoft.FastGelu"]
    assert sum(c["status"] == "passed" for c in gelu) > 50
    assert fast and all(c["status"] == "skipped" and "implements com.microsoft.Gelu only" in c["detail"] for c in fast)
    # Gelu is checked, FastGelu (of the same selection) is not: the run says which, and does not conform
    assert data["implementation"] == "numpy-gelu" and data["result"] == "does-not-conform"
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert [(u["package"], u["variant"]) for u in data["unchecked"]] == [("com.microsoft.FastGelu", None)]
    assert "skipped (numpy-gelu implements com.microsoft.Gelu only" in data["unchecked"][0]["why"]
    assert "not checked: com.microsoft.FastGelu" in proc.stdout
    assert data["checks"]["values"]["passed"] > 50 and data["checks"]["variant"]["passed"] == 0
    md = report.with_suffix(".md").read_text()
    assert "Device: not reported: numpy-gelu runs outside the suite's device model" in md
