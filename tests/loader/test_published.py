"""The reference loader loads what the suite publishes: ``export`` writes metadata.json beside the manifest, and the
card's ``getKernel(URL, {version})`` loads version 1, 2 or (no version) the newest from that directory (Node, no
GPU). The loader's own checks of bad input and of packages that are not the published one run in ``loader/test/``
(``npm test``), on metadata.json it writes itself; this test holds it to the suite's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from conformance.config import loader_entry
from conformance.engine.package import REPO_SPECS
from conformance.engine.profile import BASELINE
from conformance.tools.export import export_package

HERE = Path(__file__).resolve().parent


def test_the_cards_lines_load_what_export_writes(tmp_path):
    for name in ("com.microsoft.Gelu", "com.microsoft.Gelu@2"):
        shutil.copytree(REPO_SPECS / name, tmp_path / name)
        export_package(tmp_path / name)
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps(dict(BASELINE.limits)))
    done = subprocess.run(
        [
            shutil.which("node"),
            str(HERE / "url_source.mjs"),
            loader_entry(".").as_uri(),
            (tmp_path / "com.microsoft.Gelu").as_uri(),
            str(limits),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["1"] == {"version": 1, "variant": "scalar"}
    assert got["2"] == {"version": 2, "variant": "vec4_tail"}
    assert got["undefined"] == got["2"]
