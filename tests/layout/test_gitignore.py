""".gitignore covers what building, testing and the tools write in a checkout, and nothing the project tracks."""

import subprocess

from tests.layout.test_imports import ROOT

WRITTEN = [
    "build/lib/conformance/__init__.py",
    "dist/webgpu_kernel_conformance-0.1.0-py3-none-any.whl",
    "webgpu_kernel_conformance.egg-info/PKG-INFO",
    "conformance/__pycache__/config.cpython-311.pyc",
    "conformance/config.pyc",
    ".pytest_cache/v",
    ".hypothesis/examples/x",
    ".tox/py/x",
    ".venv/bin/python",
    "venv/bin/python",
    ".eggs/x",
    "mutation-report.json",
    "mutation-report.md",
    "reports/r.json",
    "conformance/specs/com.microsoft.Gelu/manifest.json",
    ".coverage",
    "htmlcov/index.html",
    ".mypy_cache/x",
    ".ruff_cache/x",
]
TRACKED = [
    "specs/com.microsoft.Gelu/manifest.json",
    "specs/pkg/build/webgpu/manifest.json",
    "cases/golden.py",
    "cases/com.microsoft.Gelu.yaml",
    "setup.py",
    "MANIFEST.in",
    ".pre-commit-hooks.yaml",
]


def ignored(paths):
    out = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(paths),
        capture_output=True,
        text=True,
    )
    return set(out.stdout.split())


def test_what_the_tools_write_is_ignored():
    assert set(WRITTEN) - ignored(WRITTEN) == set()


def test_what_the_project_tracks_is_not():
    assert ignored(TRACKED) == set()
