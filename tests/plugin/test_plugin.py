"""The plugin on broken and unbroken packages, through pytest's own pytester."""

import json
import os
import re
import shutil
import subprocess
import sys
from xml.etree import ElementTree

import pytest

from conformance.engine.package import REPO_SPECS
from conformance.plugin.rerun import option_actions, rerun_options
from tests.conftest import UNUSED_PLUGINS

TEMPLATE = "elementwise-bias-gelu.wgsl.jinja"


@pytest.fixture
def specs(tmp_path):
    """A scratch specs/ directory; ``break_(pkg, old, new)`` edits a package's template."""
    root = tmp_path / "specs"

    def copy(*names):
        for name in names:
            shutil.copytree(REPO_SPECS / name, root / name)
        return root

    return copy


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def run(pytester, specs_dir, *args):
    conformance_tests = REPO_SPECS.parent / "conformance" / "test_kernels.py"
    return pytester.runpytest_inprocess(
        str(conformance_tests), f"--specs={specs_dir}", "--device=vulkan", "-p", "no:cacheprovider", "-q", *args
    )


def test_unbroken_package_passes(pytester, specs):
    root = specs("com.microsoft.Gelu")
    result = run(pytester, root)
    result.assert_outcomes(passed=result.parseoutcomes()["passed"], failed=0)
    assert result.parseoutcomes()["passed"] > 50
    result.stdout.fnmatch_lines(["*conformance*", "cases: * passed*"])


def test_single_package_directory_works(pytester, specs):
    root = specs("com.microsoft.Gelu")
    result = run(pytester, root / "com.microsoft.Gelu", "-k", "vec4")
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] > 5 and "failed" not in outcomes


def test_skipped_bias_fails_exactly_the_bias_cases(pytester, specs):
    root = specs("com.microsoft.FastGelu")
    tpl = root / "com.microsoft.FastGelu" / TEMPLATE
    edit(tpl, "  v += vec4<f32>(f32(bias[b])", "  v += 0.0 * vec4<f32>(f32(bias[b])")
    edit(tpl, "    v += vec4<f32>(f32(bias[e.x % HIDDEN])", "    v += 0.0 * vec4<f32>(f32(bias[e.x % HIDDEN])")
    edit(tpl, "gelu1(f32(x[e]) + f32(bias[e % HIDDEN]))", "gelu1(f32(x[e]))")
    edit(tpl, "gelu1(f32(x[i]) + f32(bias[i % HIDDEN]))", "gelu1(f32(x[i]))")
    result = run(pytester, root, "-k", "bias and not reject and not X[0")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) > 10
    result.stdout.fnmatch_lines(
        [
            "*output Y differs from the reference*",
            "*worst elements*",
            "*rerun: *python* -m pytest *--specs=* --device=vulkan -p no:cacheprovider -q "
            "'*/conformance/test_kernels.py::test_case[[]FastGelu/*]'",
        ]
    )
    clean = run(pytester, root, "-k", "no_bias")
    assert "failed" not in clean.parseoutcomes()


def test_dropped_tail_element_fails_the_tail_cases(pytester, specs):
    root = specs("com.microsoft.FastGelu")
    edit(
        root / "com.microsoft.FastGelu" / TEMPLATE,
        "for (var e = i; e < params.count; e += stride)",
        "for (var e = i; e + 1u < params.count; e += stride)",
    )
    junit = pytester.path / "junit.xml"
    result = run(pytester, root, "-k", "vec4_tail_no_bias and f32", f"--junitxml={junit}")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 3 and outcomes.get("passed", 0) >= 1  # numel % 4 == 0 still passes
    result.stdout.fnmatch_lines(["*output Y differs from the reference*"])
    assert "session.py" not in result.stdout.str() and "During handling" not in result.stdout.str()
    # JUnit XML: the verdict as JSON, the suite's message as the failure, classname <package>.<dtype>
    cases = ElementTree.parse(junit).getroot().findall(".//testcase")
    assert cases and {c.get("classname") for c in cases} == {"com.microsoft.FastGelu.float32"}
    failures = [c for c in cases if c.find("failure") is not None]
    assert len(failures) == outcomes["failed"]
    for case in cases:
        verdict = json.loads(case.find("properties/property[@name='conformance']").get("value"))
        assert verdict["package"] == "com.microsoft.FastGelu" and verdict["dtype"] == "float32"
        assert verdict["status"] == ("failed" if case in failures else "passed")
    for case in failures:
        text = case.find("failure").text
        assert "output Y differs from the reference" in text and "worst elements" in text and "rerun: " in text
        assert "session.py" not in text and "raise " not in text and "During handling" not in text


def test_tanh_where_erf_is_specified_fails(pytester, specs):
    root = specs("com.microsoft.Gelu")
    edit(root / "com.microsoft.Gelu" / TEMPLATE, '{% if approximate == "tanh" %}', "{% if true %}")
    result = run(pytester, root, "-m", "f32 and not rejected")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) > 10
    result.stdout.fnmatch_lines(["*differs from the reference*"])


def test_malformed_manifest_is_a_clear_error_not_a_traceback(pytester, specs):
    root = specs("com.microsoft.Gelu", "com.microsoft.FastGelu")
    manifest = root / "com.microsoft.Gelu" / "manifest.json"
    raw = json.loads(manifest.read_text())
    raw["variants"][1]["when"][1] = "f16Ok(dtypes.T) and shapes.Nope"
    manifest.write_text(json.dumps(raw))
    result = run(pytester, root, "-k", "manifest or vec4_bias")
    result.stdout.fnmatch_lines(["*cannot load the package*", "*manifest.json:/variants/1/when/1: *Nope*"])
    assert "Traceback" not in result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["passed"] > 5  # the other package still runs


def test_expectations_turn_known_failures_into_strict_xfails(pytester, specs, tmp_path):
    root = specs("com.microsoft.FastGelu")
    edit(
        root / "com.microsoft.FastGelu" / TEMPLATE,
        "for (var e = i; e < params.count; e += stride)",
        "for (var e = i; e + 1u < params.count; e += stride)",
    )
    expectations = tmp_path / "known.yaml"
    expectations.write_text(
        "- id: 'FastGelu/f32/X[5]/vec4_tail_no_bias*'\n  reason: drops the last element\n"
        "- id: 'FastGelu/f32/X[4]/vec4_no_bias'\n  reason: 'wrongly listed, it passes'\n"
    )
    report = tmp_path / "r.json"
    result = run(
        pytester,
        root,
        "-k",
        "X[5]/vec4_tail_no_bias or X[4]/vec4_no_bias",
        f"--expectations={expectations}",
        f"--conformance-report={report}",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("xfailed", 0) >= 1
    assert outcomes.get("failed", 0) >= 1  # the strict xfail that passed is reported as a failure
    result.stdout.fnmatch_lines(["*XPASS(strict)*expectation 'FastGelu/f32/X[[]4]/vec4_no_bias'*"])
    data = json.loads(report.read_text())
    assert data["result"] == "does-not-conform" and not data["conforms"]
    too_wide = [c for c in data["cases"] if c["status"] == "xpassed"]
    assert too_wide and all(
        "'FastGelu/f32/X[4]/vec4_no_bias'" in c["detail"] and "too wide" in c["detail"] for c in too_wide
    )
    waived = data["waivers"]
    assert waived and {w["pattern"] for w in waived} == {"FastGelu/f32/X[5]/vec4_tail_no_bias*"}
    assert all(
        w["reason"] == "drops the last element"
        and "differs from the reference" in w["waived"]
        and w["id"].startswith("FastGelu/f32/X[5]/vec4_tail_no_bias")
        for w in waived
    )
    md = report.with_suffix(".md").read_text()
    assert "**does not conform**" in md and "## Waivers" in md and "worst elements" in md.split("## Waivers")[1]
    # only the right entry: every variant still has a case that passed its value check, so the run passes, and
    # the report says the conformance is waived, not plain
    expectations.write_text("- id: 'FastGelu/f32/X[5]/vec4_tail_no_bias*'\n  reason: drops the last element\n")
    edit(
        root / "com.microsoft.FastGelu" / TEMPLATE,
        "for (var e = i; e + 1u < params.count; e += stride)",
        "for (var e = i; e + select(0u, 1u, params.count == 5u) < params.count; e += stride)",
    )  # X[5] only
    result = run(
        pytester,
        root,
        "-k",
        "f32 and (vec4_tail_no_bias or X[4]/vec4_no_bias) and not X[0",
        f"--expectations={expectations}",
        f"--conformance-report={report}",
    )
    assert result.ret == 0
    data = json.loads(report.read_text())
    assert data["result"] == "conforms-with-waivers" and len(data["waivers"]) == result.parseoutcomes()["xfailed"]
    assert "**conforms with waivers**" in report.with_suffix(".md").read_text()
    # the same waiver, with the variant's only value-checked cases the waived ones: nothing certifies it
    result = run(
        pytester,
        root,
        "-k",
        "f32 and (X[5]/vec4_tail_no_bias or X[4]/vec4_no_bias)",
        f"--expectations={expectations}",
        f"--conformance-report={report}",
    )
    data = json.loads(report.read_text())
    assert result.ret == 1 and data["result"] == "does-not-conform"
    assert [(u["variant"], u["dtype"]) for u in data["unchecked"]] == [("vec4_tail_no_bias", "float32")]


def test_report_names_every_package_and_counts(pytester, specs, tmp_path):
    root = specs("com.microsoft.Gelu")
    report = tmp_path / "out" / "report.json"
    result = run(pytester, root, "-k", "vec4 and f32", f"--conformance-report={report}")
    assert result.ret == 0
    data = json.loads(report.read_text())
    assert data["result"] == "conforms" and data["waivers"] == []
    assert data["conforms"] and data["totals"]["passed"] == result.parseoutcomes()["passed"]
    assert data["packages"][0]["files"]["manifest.json"] and data["device"]["backend"] == "Vulkan"
    cell = data["summary"]["com.microsoft.Gelu"]["vec4"]["float32"]
    assert cell["passed"] > 0 and 0 <= cell["worst_ratio"] < 1
    assert (report.with_suffix(".md")).read_text().startswith("# Conformance report")


def test_rerun_keeps_the_runs_options_and_drops_what_selects(pytester):
    config = pytester.parseconfig()
    args = [
        "conformance/",
        "-n",
        "2",
        "-kfoo",
        "-xq",
        "--specs",
        "kernels",
        "-p",
        "no:cacheprovider",
        "--junitxml=r.xml",
        "-m",
        "f16",
        "--impl=numpy",
        "--conformance-report",
        "out/r.json",
        "--pyargs",
    ]
    assert rerun_options(args, option_actions(config)) == [
        "-q",
        "--specs",
        "kernels",
        "-p",
        "no:cacheprovider",
        "--impl=numpy",
        "--pyargs",
    ]


def test_rerun_line_under_pyargs_reruns_exactly_that_case(specs, tmp_path):
    """The line printed by a --pyargs run from an empty directory, typed there, runs that one case again."""
    root = specs("com.microsoft.FastGelu")
    edit(
        root / "com.microsoft.FastGelu" / TEMPLATE,
        "for (var e = i; e < params.count; e += stride)",
        "for (var e = i; e + 1u < params.count; e += stride)",
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_SPECS.parent)}
    first = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "conformance",
            "-p",
            "no:cacheprovider",
            *UNUSED_PLUGINS,
            "--device=vulkan",
            "--specs",
            str(root),
            "-k",
            "f32 and X[5]/vec4_tail_no_bias",
            "-x",
        ],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert first.returncode == 1, first.stdout[-3000:]
    lines = re.findall(r"^E?\s*rerun: (.*)$", first.stdout, re.M)
    assert lines, first.stdout[-3000:]
    line = lines[0]
    assert "--pyargs" in line and "-p no:cacheprovider" in line and f"--specs {root}" in line
    assert "conformance.test_kernels::test_case[FastGelu/f32/X[5]/vec4_tail_no_bias" in line
    assert " -k " not in line and " -x" not in line
    again = subprocess.run(line, shell=True, cwd=empty, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout[-3000:]
    assert re.search(r"\b1 failed in ", again.stdout.splitlines()[-1]), again.stdout[-2000:]
    assert "passed" not in again.stdout.splitlines()[-1]
