"""A package of another author with three inputs lints, generates and certifies with no change to the suite; a
five-input one keeps the candidate pool and generation small; a missing record is a clear error for value cases
only."""

from __future__ import annotations

import dataclasses
import resource
import shutil
import sys

import pytest

import cases
from cases.conditions import Analysis
from cases.pool import build_pool
from conformance.certify.checker import Checker
from conformance.certify.implementations import ManifestImplementation
from conformance.certify.outcomes import CaseFailed, verdict_for
from conformance.engine.package import load_package
from conformance.engine.planner import Planner
from conformance.ops import RecordNotFound, record_for, register, registry, unregister
from conformance.tools.lint import lint
from conformance.tools.lint_compile import DeviceCompiler

from .third_party import write_distribution, write_package


@pytest.fixture(scope="module")
def muladd(tmp_path_factory):
    """com.example.MulAdd (Y = A * B + C) and its record, registered through a temp dist-info's entry point."""
    root = tmp_path_factory.mktemp("third-party")
    package_dir = write_package(root / "specs", "MulAdd", 3)
    write_distribution(root / "site", "MulAdd", 3)
    sys.path.insert(0, str(root / "site"))
    registry.reload()
    yield load_package(package_dir)
    sys.path.remove(str(root / "site"))
    registry.reload()


def test_the_record_comes_from_the_entry_point(muladd):
    record = record_for("com.example.MulAdd")
    assert record.roles == ("A", "B", "C") and type(record).__module__ == "conformance.ops.record"


def test_it_lints_clean(muladd, device):
    assert [f.message for f in lint(muladd.root, DeviceCompiler(device))] == []


def test_it_generates_and_certifies(muladd, device):
    generated = cases.generate(muladd)
    accepted = [c for c in generated if c.accepted and not c.heavy]
    assert {c.expect["variant"] for c in accepted} == {"vec4", "scalar"}
    assert any(not c.accepted for c in generated)
    checker = Checker(ManifestImplementation(device.backend, device.adapter_filter, device.webgpu))
    failed = []
    for case in generated:
        if case.heavy or case.profile.exceeds(device.profile):
            continue
        try:
            checker.check(case, muladd, verdict_for(case))
        except CaseFailed as failure:
            failed.append(str(failure)[:300])
    assert not failed, "\n".join(failed[:5])


def test_a_wrong_kernel_is_caught(muladd, device, tmp_path):
    target = tmp_path / muladd.root.name
    shutil.copytree(muladd.root, target)
    template = target / "muladd.wgsl.jinja"
    template.write_text(template.read_text().replace("+ {{ V }}(c[i])", "- {{ V }}(c[i])"))
    package = load_package(target)
    checker = Checker(ManifestImplementation(device.backend, device.adapter_filter, device.webgpu))
    case = next(c for c in cases.generate(package) if c.accepted and c.family == "values-random")
    with pytest.raises(CaseFailed, match="non-finite or overflowing A \\* B"):
        checker.check(case, package, verdict_for(case))


def test_without_a_record_values_fail_clearly_and_rejections_still_run(muladd, tmp_path, device):
    package = load_package(write_package(tmp_path, "NoRecord", 3))
    checker = Checker(ManifestImplementation(device.backend, device.adapter_filter, device.webgpu))
    generated = cases.generate(package)
    rejected = next(c for c in generated if not c.accepted and c.expect["reason"] == "dtype")
    checker.check(rejected, package, verdict_for(rejected))  # no record needed
    empty = next(c for c in generated if c.accepted and 0 in c.inputs["A"][0])
    checker.check(empty, package, verdict_for(empty))  # nothing to compare: no record needed
    with_data = next(c for c in generated if c.accepted and c.inputs["A"][0] == (8,))
    with pytest.raises(RecordNotFound, match="entry point in the group 'conformance.ops'"):
        checker.check(with_data, package, verdict_for(with_data))
    # the documented registration function, for the running process
    register(dataclasses.replace(record_for("com.example.MulAdd"), op="com.example.NoRecord"))
    try:
        checker.check(with_data, package, verdict_for(with_data))
    finally:
        unregister("com.example.NoRecord")


def test_five_inputs_keep_the_pool_and_generation_small(tmp_path):
    package = load_package(write_package(tmp_path, "MulAdd5", 5))
    m = package.manifest
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pool = build_pool(m, Planner(m), Analysis(m))
    generated = cases.generate(package)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    # one companion varied at a time: ~ (1 + 4 x 7 + 7) calls per primary shape, not 8^4
    per_shape = len(pool) / len({c.arg("A") for c in pool})
    assert per_shape < 40, per_shape
    assert generated and len(generated) < 40 * len({c.arg("A") for c in pool}), len(generated)
    assert grown < 200, grown
    accepted = [c for c in generated if c.accepted]
    assert {c.expect["variant"] for c in accepted} == {"vec4", "scalar"}
