import shutil
import subprocess
import sys

import pytest

from conformance.engine.package import REPO_SPECS
from tests.conftest import UNUSED_PLUGINS

REPO = REPO_SPECS.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: runs the conformance suite in a subprocess (seconds, not milliseconds)")


@pytest.fixture
def published(tmp_path):
    """``copy(name)``: the package laid out as published, ``<tmp>/<name>/build/webgpu/``."""

    def copy(name):
        dst = tmp_path / "pkgs" / name / "build" / "webgpu"
        shutil.copytree(REPO_SPECS / name, dst)
        return tmp_path / "pkgs"

    return copy


def run_conformance(*args, timeout=300):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO / "conformance" / "test_kernels.py"),
        "--device=vulkan",
        "-q",
        "-p",
        "no:cacheprovider",
        *UNUSED_PLUGINS,
        *map(str, args),
    ]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def open_page(page_path, screenshot=None):
    """Console messages of the page in headless Chromium, its visible text and its SVG count."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless=new"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            messages, errors = [], []
            page.on("console", lambda m: messages.append((m.type, m.text)))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on(
                "request", lambda r: messages.append(("request", r.url)) if not r.url.startswith("file://") else None
            )
            page.goto(page_path.as_uri())
            text = page.inner_text("body")
            svgs = page.locator("svg").count()
            if screenshot:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return messages, errors, text, svgs
