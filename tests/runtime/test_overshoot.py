"""Dispatch overshoot in the default run (cases.families.dispatch_overshoot): every variant whose dispatch splits
over two dimensions has light cases with workgroups past the end (planned on OVERSHOOT_PROFILE, where a few
workgroups split), and two kernel bugs only such cases show fail the default run on lavapipe, caught by the guard
after the output."""

from __future__ import annotations

import shutil

import pytest

from cases.families import OVERSHOOT_PROFILE
from cases.golden import CASES_DIR, golden_path, load_golden
from cases.profiles import profile_named
from conformance.engine.call import make_call
from conformance.engine.package import REPO_SPECS, find_package_dirs, load_package
from conformance.engine.planner import Planner

FAMILY = "dispatch-overshoot"
MARKER = FAMILY.replace("-", "_")
TEST_KERNELS = REPO_SPECS.parent / "conformance" / "test_kernels.py"
#: name -> (package, template, text, planted text): a bug each that no case without a workgroup past the end shows.
PLANTS = {
    # one row per workgroup (the looped variants, short rows at WORKGROUP_SIZE 32): the early return dropped
    "LayerNormalization@2 without its early return": (
        "com.microsoft.LayerNormalization@2",
        "layer-norm-multirow.wgsl.jinja",
        "  let row = group;\n  if (row >= params.rows) { return; }\n",
        "  let row = group;\n",
    ),
    "Softmax@2 without its early return": (
        "com.microsoft.Softmax@2",
        "softmax-multirow.wgsl.jinja",
        "  let row = group;\n  if (row >= params.rows) { return; }\n",
        "  let row = group;\n",
    ),
    # the tail guard off by one in the workgroups of a second dispatch row only
    "Add's tail guard off by one past a 2-D split": (
        "ai.onnx.Add",
        "elementwise-add.wgsl.jinja",
        "  if (i >= params.count) { return; }\n",
        "  if (i >= params.count + select(0u, 1u, wid.y > 0u)) { return; }\n",
    ),
}


def overshoots(plan) -> bool:
    return any(
        p.dispatch.counts[1] > 1
        and p.dispatch.counts[0] * p.dispatch.counts[1] * p.dispatch.counts[2]
        > -(-p.dispatch.threads // p.dispatch.workgroup_size)
        for p in plan.passes
    )


def test_every_variant_that_splits_has_a_light_overshoot_case():
    """Wherever a golden case (heavy ones and any profile included) splits a variant's dispatch over two dimensions,
    a light case of the family (its marker: a call another family made first keeps both) makes that variant
    overshoot on OVERSHOOT_PROFILE."""
    for directory in find_package_dirs(REPO_SPECS):
        package = load_package(directory)
        planner, m = Planner(package.manifest), package.manifest
        splitting, light = set(), set()
        for case in load_golden(golden_path(CASES_DIR, package.name)):
            if not case.accepted:
                continue
            plan = planner.plan(make_call(m, case.call_args(), case.profile, case.tunables))
            if any(p.dispatch.counts[1] > 1 for p in plan.passes):
                splitting.add(plan.variant)
            if MARKER in case.markers:
                assert not case.heavy and case.profile == profile_named(OVERSHOOT_PROFILE), case.id
                assert overshoots(plan), case.id
                per_dimension = case.profile.limits["maxComputeWorkgroupsPerDimension"]
                assert per_dimension <= 4, case.id  # a few workgroups: cheap on every column, a CPU device's too
                light.add(plan.variant)
        assert splitting <= light, (package.name, sorted(splitting - light))


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_bug_past_the_end_fails_the_default_run(pytester, tmp_path, plant):
    package, template, text, planted = PLANTS[plant]
    copy = tmp_path / package
    shutil.copytree(REPO_SPECS / package, copy)
    path = copy / template
    assert path.read_text().count(text) == 1
    path.write_text(path.read_text().replace(text, planted))
    # the default run's cases of the family (the golden file matches the copy's manifest): a subset of the default
    # run that fails fails the default run
    result = pytester.runpytest_inprocess(
        str(TEST_KERNELS),
        f"--specs={copy}",
        "--device=vulkan",
        "-p",
        "no:cacheprovider",
        "-q",
        "-m",
        f"{MARKER} and not heavy",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1, outcomes
    assert "the kernel wrote past the end of the output" in result.stdout.str()
    # (the same cases pass on the package as shipped: the default run of specs/, scripts/test.sh's conformance step)
