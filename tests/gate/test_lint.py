"""``python -m conformance lint``: each check, on a package copy broken on purpose."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conformance.__main__ import main
from conformance.tools.lint import binding_problems, lint
from conformance.tools.lint_compile import DeviceCompiler
from tests.gate.conftest import FASTGELU, GELU, ROOT, edit_manifest, variant


def messages(findings) -> list[str]:
    return [str(f) for f in findings]


def test_real_specs_pass():
    result = subprocess.run([sys.executable, "-m", "conformance", "lint"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "" and result.stderr.splitlines()[-1].startswith("lint: 0 error(s) in ")
    assert "checked against @huggingface/jinja 0.5.11" in result.stderr  # the portable-subset check ran


def test_findings_and_counts_come_back_from_the_worker_processes(specs):
    """Run as a command (no other thread), lint works on each package in a forked worker: a finding made there (a
    render), and each package's portable-subset counts, reach the output as they do in-process."""
    template = specs / GELU / "elementwise-bias-gelu.wgsl.jinja"
    text = template.read_text()
    template.write_text(text.replace("{{ declarations }}", "{{ declarations }}\n// {{ noSuchName }}", 1))
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "lint", str(specs), "--no-compile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CONFORMANCE_JOBS": "2"},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    rendered = [line for line in result.stdout.splitlines() if "'noSuchName' is undefined" in line]
    assert rendered and all(line.startswith(f"{specs / GELU}/manifest.json:/variants/") for line in rendered), (
        result.stdout
    )
    counted = re.findall(
        r"^lint: (\S+): \d+ template contexts and \d+ expression evaluations compared", result.stderr, re.M
    )
    assert sorted(counted) == ["com.microsoft.FastGelu", "com.microsoft.Gelu"], result.stderr


def test_every_engine_problem_is_a_line_with_file_and_pointer(specs, capsys):
    def break_it(raw):
        variant(raw, "vec4_bias")["when"].append("notARule")
        raw["bindingSets"]["scalar"][0]["arg"] = "Z"

    edit_manifest(specs / FASTGELU, break_it)
    assert main(["lint", str(specs / FASTGELU), "--no-compile"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(
        f"{FASTGELU}/manifest.json:/variants/0/when/3: unknown name 'notARule'; known names: " in line for line in out
    ), out
    assert any(":/bindingSets/scalar/0/arg: arg 'Z' is not in args" in line for line in out), out
    assert all(f"{FASTGELU}/manifest.json:/" in line for line in out if line and not line.startswith(" "))


def test_duplicate_priority(specs):
    edit_manifest(specs / FASTGELU, lambda raw: variant(raw, "vec4_no_bias").update(priority=30))
    found = messages(lint(specs / FASTGELU))
    assert any("/variants/1/priority: priority 30 is shared with variant 'vec4_bias'" in f for f in found), found


def test_shadowed_variant_names_what_takes_its_calls(specs):
    edit_manifest(specs / FASTGELU, lambda raw: variant(raw, "scalar_no_bias").update(priority=16))
    found = messages(lint(specs / FASTGELU))
    assert len(found) == 1, found
    assert ":/variants/3: variant 'vec4_tail_no_bias' (priority 15) is selected by no call: shadowed" in found[0]
    assert "scalar_no_bias, vec4_no_bias" in found[0]


def test_undefined_template_name(specs):
    template = specs / GELU / "elementwise-bias-gelu.wgsl.jinja"
    text = template.read_text()
    template.write_text(text.replace("{{ declarations }}", "{{ declarations }}\n// {{ noSuchName }}", 1))
    found = messages(lint(specs / GELU))
    assert found and all("'noSuchName' is undefined" in f for f in found), found
    assert any(":/variants/" in f and "/passes/0: f32 (case Gelu/f32/" in f for f in found)


def test_wgsl_that_does_not_compile(specs, device):
    template = specs / GELU / "elementwise-bias-gelu.wgsl.jinja"
    template.write_text(template.read_text().replace("const CLAMP: f32 = 10.0;", "const CLAMP: f32 = ;"))
    found = messages(lint(specs / GELU, DeviceCompiler(device)))
    assert found and all("WGSL compilation failed" in f for f in found), found
    # every variant and dtype (f16 too: the device has shader-f16)
    shown = {f.split(": ", 2)[1].split(" (case")[0] for f in found}
    assert shown == {"f32", "f16"} and len(found) == 2 * 2, found


def test_bindings_plan_vs_shader(specs):
    template = specs / GELU / "elementwise-bias-gelu.wgsl.jinja"
    text = template.read_text().replace(
        "{{ declarations }}",
        '{{ declarations | replace(" y: ", " out: ") | replace("array<", "array< ") }}\n'
        "@group(0) @binding(9) var<storage, read> extra: array<f32>;",
    )
    template.write_text(text)
    found = messages(lint(specs / GELU))
    assert any(
        "@group(0) @binding(1): the plan has var<storage,read_write> y: array<f32>, the shader declares "
        "var<storage,read_write> out: array<f32>" in f
        for f in found
    ), found
    assert any("@group(0) @binding(9) 'extra' is declared by the shader but is not in the plan" in f for f in found)
    assert any("binding 'extra' is declared but never used" in f for f in found)
    assert any("binding 'out' is declared but never used" in f for f in found)
    assert not any("array< " in f for f in found)  # whitespace in types is not a difference


def test_declared_binding_never_used(specs):
    def add_binding(raw):
        raw["bindingSets"]["scalar"].insert(
            2,
            {
                "name": "spare",
                "arg": "X",
                "semantic": "X",
                "buffer": {"type": "read-only-storage"},
                "elementType": "$scalar",
            },
        )

    edit_manifest(specs / FASTGELU, add_binding)
    found = messages(lint(specs / FASTGELU))
    assert found and all("binding 'spare' is declared but never used" in f for f in found), found


def test_binding_check_ignores_comments_and_missing_declarations():
    class B:
        declaration = "@group(0) @binding(0) var<storage, read> x: array<f32>;"

    class P:
        bindings = (B,)

    assert binding_problems(P, "// x\nfn main() {}") == [
        "@group(0) @binding(0) 'x' is in the plan but the shader does not declare it"
    ]
    assert binding_problems(P, B.declaration + "\n// uses x only here\nfn main() {}") == [
        "binding 'x' is declared but never used"
    ]


def test_identically_named_templates_must_match(specs):
    template = specs / FASTGELU / "elementwise-bias-gelu.wgsl.jinja"
    template.write_text(template.read_text().replace("const CLAMP: f32 = 10.0;", "const CLAMP: f32 = 9.0;"))
    found = messages(lint(specs))
    assert len(found) == 1, found
    line = next(i + 1 for i, text in enumerate(template.read_text().splitlines()) if "9.0" in text)
    assert (
        f"{GELU}/elementwise-bias-gelu.wgsl.jinja:/: template elementwise-bias-gelu.wgsl.jinja differs from "
        in found[0]
        and f"{FASTGELU}/elementwise-bias-gelu.wgsl.jinja (first at line {line})" in found[0]
    )


@pytest.mark.parametrize("webgpu", ["dawn", "chromium"])
def test_lint_compiles_with_tint_natively_and_in_the_browser(specs, webgpu):
    """The compile check runs on any WebGPU implementation: Tint (Dawn) natively and in a Chromium page."""
    cmd = [sys.executable, "-m", "conformance", "lint", str(specs / GELU), "--webgpu", webgpu]
    ok = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and f"through {webgpu}" in ok.stderr, ok.stdout + ok.stderr
    template = specs / GELU / "elementwise-bias-gelu.wgsl.jinja"
    template.write_text(template.read_text().replace("const CLAMP: f32 = 10.0;", "const CLAMP: f32 = ;"))
    broken = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    found = [line for line in broken.stdout.splitlines() if line.startswith(str(specs))]
    assert broken.returncode == 1 and found and all("WGSL compilation failed" in f for f in found), broken.stdout
    assert re.search(r"line \d+: const CLAMP: f32 = ;", broken.stdout)  # Tint's line:col, mapped to the line


def test_a_failing_binding_is_named_as_the_cause(specs):
    """A variant whose calls all fail in a binding is not 'shadowed': lint names the binding."""

    def break_it(raw):
        v = variant(raw, "vec4")
        v["passes"][0]["bindings"][0]["length"] = 7

    edit_manifest(specs / GELU, break_it)
    found = [f for f in messages(lint(specs / GELU)) if "selected by no call" in f]
    assert len(found) == 1, found
    assert "variant 'vec4' (priority 20) is selected by no call: every call its `when` selects fails" in found[0]
    assert "binding 'x' declares 7 x vec4<" in found[0] and "shadowed" not in found[0]
