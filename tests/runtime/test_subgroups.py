"""The `subgroups` feature end to end: its name in profiles, the WGSL each compiler takes, and the row-op variants
of specs/proposals/row-ops-subgroups.json (selected only on a profile with the feature, twinned in the cases, run
on this machine's lavapipe, which offers subgroups of 8 through wgpu and Dawn)."""

import re

import numpy as np
import pytest

from cases.generate import generate
from cases.profiles import PROFILES
from conformance import BASELINE, load_kernel
from conformance.engine.package import REPO_SPECS, load_package
from conformance.gpu.backends import for_compiler
from conformance.gpu.device import webgpu_features
from conformance.tools import proposal
from conformance.tools.mutate.equivalence import argue
from conformance.tools.mutate.mutants import template_mutants
from reference import compare
from reference.registry import reference_for
from tests.runtime.test_numerics import RNG
from tests.runtime.test_proposal import generated_case_outcomes

SUBGROUPS = PROFILES["subgroups"]
PROPOSAL = REPO_SPECS / "proposals" / "row-ops-subgroups.json"
ROW_OPS = ("com.microsoft.LayerNormalization@2", "com.microsoft.Softmax@2")


def test_wgpu_native_names_are_read_as_webgpu_feature_names():
    assert webgpu_features({"subgroup", "shader-f16", "timestamp-query"}) == {
        "subgroups",
        "shader-f16",
        "timestamp-query",
    }


def test_device_profile_has_subgroups_where_the_adapter_offers_them(device):
    native = set(device.device.features)
    assert ("subgroups" in device.profile.features) == bool(native & {"subgroup", "subgroups"})


WGSL = "enable f16;\nenable subgroups;\n@compute @workgroup_size(1) fn main() {}\n"


def test_naga_gets_the_shader_without_the_directive_it_does_not_implement():
    for naga in ("wgpu", "firefox"):
        assert for_compiler(naga, WGSL) == "enable f16;\n\n@compute @workgroup_size(1) fn main() {}\n"
    assert for_compiler("dawn", WGSL) == WGSL and for_compiler("chromium", WGSL) == WGSL


def check_rows(kernel, profile, tunables=None, **arrays):
    """Run on the device, verified (guards, inputs intact), and compare with the row reference's own tolerance."""
    plan, run = kernel.run(profile, tunables, verify=True, **arrays)
    ref = reference_for(kernel.manifest.domain, kernel.manifest.name)
    result = compare(
        run.outputs["Y"], ref.compute(arrays)["Y"], ref.tolerance(str(arrays["X"].dtype), arrays), inputs=arrays["X"]
    )
    assert result.passed, result.message()
    assert all(run.guards_intact.values()) and all(run.inputs_intact.values())
    return plan


@pytest.fixture(scope="module")
def sg_specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("subgroups")
    for op in ROW_OPS:
        proposal.apply(REPO_SPECS / op, PROPOSAL, root)
    return root


@pytest.fixture(scope="module")
def kernels(sg_specs, device):
    return {
        op.split(".")[-1].split("@")[0]: load_kernel(sg_specs / f"{op}.row-ops-subgroups", device=device)
        for op in ROW_OPS
    }


CHOICES = [  # (package, X shape, dtype) -> variant without the feature (with it: the same id + "_sg")
    ("Softmax", (64, 256), "float32", "vec4"),
    ("Softmax", (5, 1023), "float16", "scalar"),
    ("Softmax", (2, 40000), "float32", "vec4_looped"),
    ("Softmax", (2, 9001), "float32", "looped"),
    ("LayerNormalization", (12, 768), "float32", "vec4_bias"),
    ("LayerNormalization", (3, 7), "float16", "scalar_bias"),
]


@pytest.mark.parametrize("package,shape,dtype,variant", CHOICES)
def test_subgroup_twins_are_chosen_only_with_the_feature(kernels, package, shape, dtype, variant):
    args = {"X": (shape, dtype)}
    if package == "LayerNormalization":
        args |= {"scale": ((shape[-1],), dtype), "bias": ((shape[-1],), dtype)}
    assert kernels[package].plan(BASELINE, **args).variant == variant
    assert kernels[package].plan(SUBGROUPS, **args).variant == variant + "_sg"


def test_the_cases_twin_every_light_accepted_baseline_case_on_the_subgroups_profile(sg_specs):
    for op in ROW_OPS:
        cases = generate(load_package(sg_specs / f"{op}.row-ops-subgroups"))
        base = {c.id: c for c in cases if c.profile.name == "baseline" and c.accepted and not c.heavy}
        twins = [c for c in cases if c.profile.name == "subgroups"]
        assert twins and all(c.expect["variant"].endswith("_sg") for c in twins if c.accepted)
        assert all(not c.expect["variant"].endswith("_sg") for c in base.values())
        twinned = {c.id.replace("@subgroups", "").replace("_sg", "") for c in twins}  # the ids name the variant
        assert set(base) <= twinned, sorted(set(base) - twinned)[:5]


@pytest.mark.parametrize("shape", [(64, 256), (5, 1023), (3, 40000), (1, 4), (7, 130)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_subgroup_softmax_matches_the_reference(kernels, shape, dtype):
    x = RNG.normal(0, 4, shape).astype(dtype)
    assert check_rows(kernels["Softmax"], SUBGROUPS, X=x).variant.endswith("_sg")


@pytest.mark.parametrize("shape", [(64, 768), (5, 1023), (2, 20000), (9, 3)])
def test_subgroup_layer_norm_matches_the_reference(kernels, shape):
    x = (RNG.normal(0, 1, shape) * 50 + 1e3).astype(np.float32)  # |mean| / sigma = 20: the variance pass counts
    scale, bias = RNG.normal(0, 1, shape[-1]).astype(np.float32), RNG.normal(0, 1, shape[-1]).astype(np.float32)
    assert check_rows(kernels["LayerNormalization"], SUBGROUPS, X=x, scale=scale, bias=bias).variant.endswith("_sg")


def test_partial_subgroups_take_the_stride_one_path(kernels):
    """WORKGROUP_SIZE 20 (one row of 20 lanes per workgroup) on subgroups of 8: the third subgroup is partial (4
    lanes), so it sums each row alone; the results must not change."""
    x = RNG.normal(0, 4, (6, 97)).astype(np.float32)
    plan = check_rows(kernels["Softmax"], SUBGROUPS, {"WORKGROUP_SIZE": 20}, X=x)
    assert plan.variant.endswith("_sg") and plan.passes[0].dispatch.workgroup_size == 20


def test_the_shipped_templates_carry_no_subgroup_path(sg_specs):
    """The proposal brings its own templates (specs/proposals/row-ops-subgroups/): the shipped ones have none of it,
    and every `_sg` variant of the applied copy renders the proposal's template."""
    for op, template in (
        ("com.microsoft.Softmax@2", "softmax-multirow"),
        ("com.microsoft.LayerNormalization@2", "layer-norm-multirow"),
    ):
        shipped = re.sub(r"\{#.*?#\}", "", (REPO_SPECS / op / f"{template}.wgsl.jinja").read_text(), flags=re.S)
        assert not re.search(r"subgroup|reduce_sg|sg_", shipped), op  # comments aside
        copy = load_package(sg_specs / f"{op}.row-ops-subgroups")
        shaders = {p.shader for v in copy.manifest.variants if v.id.endswith("_sg") for p in v.passes}
        assert shaders == {f"{template}-subgroups.wgsl.jinja"}
        assert (copy.root / f"{template}-subgroups.wgsl.jinja").read_text() == (
            PROPOSAL.parent / "row-ops-subgroups" / f"{template}-subgroups.wgsl.jinja"
        ).read_text()


def test_proposal_packages_pass_their_generated_subgroup_cases(pytester, sg_specs):
    # Softmax's package alone: the selection takes none of LayerNormalization's cases, so they are not generated
    outcomes = generated_case_outcomes(
        pytester, sg_specs / "com.microsoft.Softmax@2.row-ops-subgroups", "Softmax and subgroups"
    )
    assert outcomes["passed"] > 100 and "failed" not in outcomes and "error" not in outcomes


@pytest.mark.parametrize(
    "op,template",
    [
        ("com.microsoft.Softmax@2", "softmax-multirow-subgroups.wgsl.jinja"),
        ("com.microsoft.LayerNormalization@2", "layer-norm-multirow-subgroups.wgsl.jinja"),
    ],
)
def test_the_power_of_two_guard_mutant_is_argued_equivalent(op, template, sg_specs):
    """Both reductions of reduce_sg are correct, so its guard's `- 1u` made `+ 1u` changes only the speed."""
    pkg, short = load_package(sg_specs / f"{op}.row-ops-subgroups"), op.split(".")[-1].split("@")[0]
    mutants = [
        m
        for m in template_mutants(short, pkg.name, template, (pkg.root / template).read_text())
        if "sg_size - 1u" in m.description and m.id.endswith(":-->+")
    ]
    assert len(mutants) == 1
    argue(short, mutants)
    assert mutants[0].status == "equivalent" and "speed, not the outputs" in mutants[0].equivalence
