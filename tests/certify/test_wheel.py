"""A plain (non-editable) install certifies the packages it ships, from any directory.

``pip install .`` builds a wheel that carries ``specs/`` as ``conformance/specs/`` (setup.py) and the golden files
as package data of ``cases``; ``pytest --pyargs conformance`` from an empty directory then runs every case of the
shipped packages. Marked ``packaging`` (run with ``--run-packaging``): it builds and installs into a scratch venv.
"""

import json
import os
import shutil
import subprocess
import time
import venv

import pytest

from tests.certify.conftest import REPO

IGNORED = shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__", ".tox", ".hypothesis",
                                 ".pytest_cache", "reports")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv (seeing this interpreter's packages: wgpu, numpy...) with the suite installed from a wheel."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=IGNORED)   # the work tree as it is, built outside the checkout
    env_dir = root / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "-q", str(source)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return python, env


@pytest.mark.packaging
def test_wheel_ships_specs_and_golden_files(installed, tmp_path):
    python, env = installed
    probe = ("import conformance, cases, pathlib; from conformance.engine.package import REPO_SPECS; "
             "print(conformance.__file__); print(REPO_SPECS); "
             "print(sorted(p.name for p in pathlib.Path(cases.__file__).parent.glob('*.yaml')))")
    out = subprocess.run([str(python), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    site = os.path.dirname(os.path.dirname(out[0]))
    assert site.startswith(str(python.parent.parent)), out  # the wheel's copy, not this checkout
    assert out[1] == os.path.join(site, "conformance", "specs")
    assert "com.microsoft.FastGelu.yaml" in out[2] and "com.microsoft.Gelu.yaml" in out[2]


@pytest.mark.packaging
def test_pyargs_from_an_empty_directory_certifies_the_shipped_packages(installed, tmp_path):
    python, env = installed
    empty = tmp_path / "empty"
    empty.mkdir()
    report = tmp_path / "report.json"
    start = time.perf_counter()
    proc = subprocess.run([str(python), "-m", "pytest", "--pyargs", "conformance", "--device=vulkan", "-q",
                           "-p", "no:cacheprovider", f"--conformance-report={report}"], cwd=empty, env=env,
                          capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    data = json.loads(report.read_text())
    assert data["result"] == "conforms" and data["totals"]["passed"] >= 400, data["totals"]
    assert {p["package"] for p in data["packages"]} == {"com.microsoft.FastGelu", "com.microsoft.Gelu"}
    assert all(p["root"].startswith(str(python.parent.parent)) for p in data["packages"])
    print(f"pytest --pyargs conformance from an empty directory: {data['totals']['passed']} passed in {elapsed:.1f}s")
