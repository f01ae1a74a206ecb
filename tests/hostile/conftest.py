"""Shared helpers of the hostile-input tests (issue 10).

Hypothesis profiles: ``hostile`` (the default: derandomized, a fixed number of examples, CI-stable)
and ``nightly`` (randomized, many more examples), chosen with ``HYPOTHESIS_PROFILE=nightly``
(``tox -e nightly``).  Each fuzz test sets its own example count as a share of the profile's.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, settings

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from conformance.engine.package import REPO_SPECS  # noqa: E402
from tests.conftest import UNUSED_PLUGINS  # noqa: E402
from tests.gate.conftest import device  # noqa: E402,F401  (the session's Vulkan device, or a skip)

SEEDS = {
    name: json.loads((REPO_SPECS / name / "manifest.json").read_text(encoding="utf-8"))
    for name in ("com.microsoft.FastGelu", "com.microsoft.Gelu")
}
TEMPLATE = "elementwise-bias-gelu.wgsl.jinja"

#: Examples per fuzz test, as a multiple of each test's share (the default run: about 2,400 in all).
SCALE = {"hostile": 1, "nightly": 25}

_common = dict(
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,  # budgets count work, not time
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
    print_blob=True,
)
settings.register_profile("hostile", derandomize=True, database=None, **_common)
settings.register_profile("nightly", derandomize=False, **_common)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "hostile")
if PROFILE not in SCALE:
    raise pytest.UsageError(f"HYPOTHESIS_PROFILE={PROFILE!r}: expected one of {', '.join(SCALE)}")
settings.load_profile(PROFILE)


def examples(share: int) -> int:
    """``share`` examples in the default run, SCALE times as many in the nightly one."""
    return share * SCALE[PROFILE]


def seed(name: str) -> dict:
    return copy.deepcopy(SEEDS[name])


@pytest.fixture
def make_specs(tmp_path):
    """``make_specs(pkg_dir_name=source_pkg, ...)``: a scratch specs/ directory of copied packages."""
    root = tmp_path / "specs"

    def make(**packages):
        for dirname, source in packages.items():
            shutil.copytree(REPO_SPECS / source, root / dirname)
        return root

    return make


def victim(tmp_path) -> pathlib.Path:
    """A file outside every package and output folder, that nothing may read through a link or overwrite."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


def edit(path: pathlib.Path, old: str, new: str, count: int = -1) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count))


def run_cli(*args, env=None, timeout=240, cwd=ROOT) -> subprocess.CompletedProcess:
    """Run ``python *args`` in the repository (a fresh process: what a user would type)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full_env.pop("PYTEST_XDIST_WORKER", None)
    full_env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def run_conformance(specs_dir, *args, env=None, timeout=240) -> subprocess.CompletedProcess:
    """``pytest conformance/ --specs DIR --device=vulkan ARGS`` in a subprocess (without the plugins a conformance
    run does not use: UNUSED_PLUGINS)."""
    return run_cli(
        "-m",
        "pytest",
        "conformance/",
        f"--specs={specs_dir}",
        "--device=vulkan",
        "-p",
        "no:cacheprovider",
        *UNUSED_PLUGINS,
        "-q",
        "-rf",
        *args,
        env=env,
        timeout=timeout,
    )
