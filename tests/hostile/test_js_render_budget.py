"""lint's JavaScript render has the Python sandbox's budget (issue 40, item 10).

A branch that only @huggingface/jinja takes (``[1] == [1]`` is false there, true in Jinja2) is never run by the
Python sandbox; holding ``range(300000000)`` it grew Node to ~1.6 GiB until it died, and a loop held lint until
its 300 s backstop. Now each JavaScript job counts its work (every node, every block run, every character or
item built) against RENDER_WORK_LIMIT and MAX_VALUE, and an overrun is one located error of the template.
"""

from __future__ import annotations

import shutil

import pytest

from conformance.engine.package import REPO_SPECS
from tests.hostile.conftest import ROOT, TEMPLATE, run_cli

GELU = "com.microsoft.Gelu"
JS_ONLY = "{% if [1] == [1] %}{% else %}BODY{% endif %}"


@pytest.mark.parametrize(
    "body, named",
    [
        ("{% for i in range(300000000) %}x{% endfor %}", "range() of 300000000 characters or items, more than 1048576"),
        (
            "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}"
            "{% endfor %}",
            "spent more than 4194304 units of work (RENDER_WORK_LIMIT",
        ),
        (
            "{% set s = namespace(t='x') %}{% for i in range(40) %}{% set s.t = s.t ~ s.t %}{% endfor %}{{ s.t }}",
            "units of work",
        ),  # the doubling string: charged for what it builds
    ],
)
def test_a_branch_only_javascript_takes_is_bounded_and_located(tmp_path, body, named):
    pr = tmp_path / "pr"
    shutil.copytree(REPO_SPECS / GELU, pr / "kernels" / GELU)
    template = pr / "kernels" / GELU / TEMPLATE
    template.write_text(JS_ONLY.replace("BODY", body) + template.read_text())
    proc = run_cli(
        "-P",
        "-m",
        "conformance",
        "lint",
        "kernels",
        "--no-compile",
        "--require-js",
        cwd=pr,
        env={"CONFORMANCE_JINJA_JS": str(ROOT / "node_modules" / "@huggingface" / "jinja")},
        timeout=400,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert f"kernels/{GELU}/{TEMPLATE}:" in out and "over the Python sandbox's budget" in out, out[-3000:]
    assert named in out, out[-3000:]
    assert "has exited" not in out and "no answer within" not in out and "Traceback" not in out, out[-3000:]
