"""A plain (non-editable) install certifies the packages it ships, from any directory.

``pip install .`` builds a wheel that carries ``specs/`` as ``conformance/specs/`` (setup.py) and the golden files
as package data of ``cases``; ``pytest --pyargs conformance`` from an empty directory then runs every case of the
shipped packages. Marked ``packaging`` (run with ``--run-packaging``): it builds and installs into a scratch venv.
"""

import json
import os
import shutil
import site
import subprocess
import time
import venv
from pathlib import Path

import pytest

from conformance.engine.package import REPO_SPECS, find_package_dirs, load_package
from tests.certify.conftest import REPO

IGNORED = shutil.ignore_patterns(
    ".git", "build", "*.egg-info", "__pycache__", ".tox", ".hypothesis", ".pytest_cache", "reports"
)


def active_site_packages() -> list[str]:
    """The site-packages of the interpreter running this test: in a virtual environment, that environment's.

    ``venv.create(system_site_packages=True)`` links the new environment to the *base* interpreter, whose
    site-packages lack what the active environment installed (wgpu, numpy...): the scratch venv names these in a
    ``.pth`` file instead."""
    return [p for p in site.getsitepackages() if os.path.isdir(p)]


def shipped_packages() -> set[str]:
    """The packages the checkout ships (its ``specs/``), which the installed wheel must certify."""
    return {load_package(d).name for d in find_package_dirs(REPO_SPECS)}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv (seeing the active environment's packages: wgpu, numpy...) with the suite installed from a wheel."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=IGNORED)  # the work tree as it is, built outside the checkout
    env_dir = root / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    own_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(own_site, "active-environment.pth").write_text("\n".join(active_site_packages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "-q", str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return python, env


@pytest.mark.packaging
def test_wheel_ships_specs_and_golden_files(installed, tmp_path):
    python, env = installed
    probe = (
        "import conformance, cases, pathlib; from conformance.engine.package import REPO_SPECS; "
        "print(conformance.__file__); print(REPO_SPECS); "
        "import json; here = pathlib.Path(cases.__file__).parent; "
        "print(json.dumps([sorted(p.stem for p in here.glob(f'*.{ext}')) for ext in ('yaml', 'digest')]))"
    )
    out = subprocess.run(
        [str(python), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    site = os.path.dirname(os.path.dirname(out[0]))
    assert site.startswith(str(python.parent.parent)), out  # the wheel's copy, not this checkout
    assert out[1] == os.path.join(site, "conformance", "specs")
    golden, digests = json.loads(out[2])
    assert set(golden) == shipped_packages() and digests == golden, out  # each golden file with its digest
    usage = subprocess.run(
        [str(python), "-m", "conformance", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "merge" in usage and "plot" in usage, usage


@pytest.mark.packaging
def test_pyargs_from_an_empty_directory_certifies_the_shipped_packages(installed, tmp_path):
    python, env = installed
    empty = tmp_path / "empty"
    empty.mkdir()
    report = tmp_path / "report.json"
    start = time.perf_counter()
    proc = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "--pyargs",
            "conformance",
            "--device=vulkan",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--conformance-report={report}",
        ],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert "no digest file" not in out and "stale" not in out, out[-3000:]  # no warning: every golden file loads
    assert out.count("digest matches") == len(shipped_packages()), out[-3000:]
    data = json.loads(report.read_text())
    assert data["result"] == "conforms" and data["totals"]["failed"] == 0, data["totals"]
    assert {p["package"] for p in data["packages"]} == shipped_packages()
    assert all(p["root"].startswith(str(python.parent.parent)) for p in data["packages"])
    summary = out[out.index("= conformance =") :] if "= conformance =" in out else out[-3000:]
    print(
        f"\n{summary}\npytest --pyargs conformance from an empty directory: {data['totals']['passed']} passed "
        f"in {elapsed:.1f}s"
    )
