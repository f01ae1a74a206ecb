"""The shared template: identical copies, and every variant/dtype renders and compiles."""

import itertools

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from conformance.engine.package import REPO_SPECS, find_package_dirs


def test_identically_named_templates_are_byte_identical():
    by_name = {}
    for pkg in find_package_dirs(REPO_SPECS):
        for path in pkg.glob("*.jinja"):
            by_name.setdefault(path.name, []).append(path)
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert "elementwise-bias-gelu.wgsl.jinja" in shared
    for name, paths in shared.items():
        contents = {p.read_bytes() for p in paths}
        assert len(contents) == 1, f"{name} differs between {[str(p) for p in paths]}"


CALLS = {  # one call per variant of each manifest
    "com.microsoft.FastGelu": [
        dict(X=(2, 8), bias=(8,)),
        dict(X=(8,)),
        dict(X=(4, 3), bias=(3,)),
        dict(X=(5,)),
        dict(X=(0, 4), bias=(4,)),
        dict(X=(0, 4)),
    ],
    "com.microsoft.Gelu": [dict(X=(8,)), dict(X=(6,))],
}


@pytest.mark.parametrize("op,dtype", itertools.product(CALLS, ["float32", "float16"]))
def test_every_variant_renders_compiles_and_enables_f16_only_when_used(device, op, dtype):
    kernel = load_kernel(op, device=device, version=1)
    seen = set()
    for call in CALLS[op]:
        args = {role: (shape, dtype) for role, shape in call.items()}
        plan = kernel.plan(profile=BASELINE, **args)
        seen.add(plan.variant)
        for pass_plan in plan.passes:
            _, _, wgsl = kernel_runtime(kernel).pipeline(plan, pass_plan)
            assert ("enable f16;" in wgsl) == (dtype == "float16")
    assert seen == {v.id for v in kernel.manifest.variants}


def kernel_runtime(kernel):
    from conformance.gpu.runtime import Runtime

    return Runtime(kernel.device, kernel.package)


def test_pipelines_are_compiled_once_per_distinct_shader(device):
    kernel = load_kernel("com.microsoft.Gelu", device=device, version=1)
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    kernel(X=x)
    before = device.compilations
    for n in (4096, 8192, 400):  # same variant and constants: no new compilation
        kernel(X=np.ones(n, np.float32))
    assert device.compilations == before


def test_template_error_names_the_file_and_line_and_keeps_its_type(device, package_copy):
    from conformance.errors import TemplateError

    root = package_copy("com.microsoft.Gelu")
    template = root / "elementwise-bias-gelu.wgsl.jinja"
    lines = template.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if "{{ workgroupSize }}u;" in line)
    template.write_text(template.read_text().replace("{{ workgroupSize }}u;", "{{ nope }}u;"))
    with pytest.raises(TemplateError, match=rf"elementwise-bias-gelu.wgsl.jinja:{number}: .*'nope' is undefined"):
        load_kernel(root, device=device)(X=np.ones(8, np.float32))


@pytest.mark.parametrize("dtype,n", [(np.float32, 6), (np.float16, 3)])
def test_a_write_past_the_output_is_caught_by_the_guard(device, package_copy, dtype, n):
    """Outputs are bound with their guard in verify mode, so robust buffer access cannot hide the write; an odd
    f16 count leaves two padding bytes inside the binding, and they are guarded too."""
    root = package_copy("com.microsoft.Gelu")
    template = root / "elementwise-bias-gelu.wgsl.jinja"
    template.write_text(
        template.read_text().replace("if (i >= params.count) { return; }", "if (i > params.count) { return; }")
    )
    plan, run = load_kernel(root, device=device).run(verify=True, X=np.ones(n, dtype))
    assert plan.variant == "scalar" and run.guards_intact == {"Y": False}
    _, clean = load_kernel("com.microsoft.Gelu", device=device, version=1).run(verify=True, X=np.ones(n, dtype))
    assert clean.guards_intact == {"Y": True}


@pytest.mark.parametrize("dtype,n", [(np.float32, 1001), (np.float16, 1001)])
def test_a_write_past_a_ranged_tail_is_caught_by_the_guard(device, package_copy, dtype, n):
    """A split variant writes the output through two bindings; the guard follows the one that ends at the
    tensor's end (the tail, bound at an offset), so one element too many there is caught as well."""
    root = package_copy("com.microsoft.Gelu@2")
    template = root / "elementwise-bias-gelu.wgsl.jinja"
    text = template.read_text()
    assert "} else if (i - params.count < params.tail) {" in text
    template.write_text(
        text.replace("} else if (i - params.count < params.tail) {", "} else if (i - params.count <= params.tail) {")
    )
    args = dict(verify=True, X=np.ones(n, dtype))
    plan, run = load_kernel(root, device=device).run(**args)
    assert plan.variant.startswith("split_") and run.guards_intact == {"Y": False}
    plan, clean = load_kernel("com.microsoft.Gelu", device=device, version=2).run(**args)
    assert plan.variant.startswith("split_") and clean.guards_intact == {"Y": True}
    assert np.allclose(clean.outputs["Y"].astype(np.float64), 0.8413447460685429, rtol=1e-3)


def test_f16_phi_fit_in_the_template_is_the_scripts_and_within_its_bound():
    """The f16 erf path's coefficients come from research/fit_phi_f16.py; its error stays far below f16's half ULP."""
    import re
    import runpy

    fit = runpy.run_path(str(REPO_SPECS.parent / "research" / "fit_phi_f16.py"))
    text = (REPO_SPECS / "com.microsoft.Gelu" / "elementwise-bias-gelu.wgsl.jinja").read_text()
    start = text.index("let neg_log2_odds_per_x =")
    polynomial = text[start : text.index(";", start)]
    in_template = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", polynomial)]
    coefficients = fit["coefficients"]()
    assert in_template == coefficients
    xmax = repr(fit["XMAX"])
    for use in (f"clamp(x, {{{{ T }}}}(-{xmax}), {{{{ T }}}}({xmax}))", f"x < {{{{ T }}}}(-{xmax})"):
        assert use in text
    assert fit["max_relative_error"](coefficients) < 6.5e-6 < 2.0**-11 / 10
