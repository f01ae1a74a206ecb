"""The js-loader column in JavaScript runtimes (``--webgpu=node``: Node with Dawn for Node, OpenGL ES on llvmpipe
here; ``--webgpu=deno``: Deno with wgpu, lavapipe with shader-f16): the planted loader bugs and misbehaving loaders
of the browser tests fail there too, on the same evidence (the host runs page_loader.mjs's commands and watches the
device it hands the loader)."""

from __future__ import annotations

import pytest

from conformance.certify.outcomes import CaseFailed
from conformance.impls.js_loader.runtime import unavailable
from tests.browsers.test_js_loader import MISBEHAVING, PLANTS, WRAPPER, check, loader_impl
from tests.browsers.test_js_loader_evidence import GETKERNEL, NOTHING, ON_THE_CPU, planted
from tests.browsers.test_js_loader_evidence import PLANTS as WORK_PLANTS
from tests.loader.planted import planted_loader

RUNTIMES = [
    pytest.param(r, marks=pytest.mark.skipif(bool(unavailable(r)), reason=str(unavailable(r))))
    for r in ("node", "deno")
]


def _module(tmp_path, name, text, runtime):
    root = planted_loader(tmp_path, "index.js", "export { ContractError", "export { ContractError")
    (root / "src" / name).write_text(text)
    return loader_impl(root / "src" / name, webgpu=runtime)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_planted_plan_bugs_fail_their_case_naming_the_field(tmp_path, runtime):
    for plant in sorted(PLANTS):
        file, old, new, package, case_id, words = PLANTS[plant]
        impl = loader_impl(planted_loader(tmp_path / plant, file, old, new) / "src" / "index.js", webgpu=runtime)
        err = check(impl, package, case_id)
        assert isinstance(err, CaseFailed) and words in str(err), (plant, err)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_misbehaving_loaders_fail_only_the_case_they_ran(tmp_path, runtime):
    for behaviour in sorted(set(MISBEHAVING) - {"hangs"}):  # (20 s each)
        body, words = MISBEHAVING[behaviour]
        impl = _module(tmp_path / behaviour, "bad.mjs", WRAPPER.format(body=body), runtime)
        err = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")
        assert isinstance(err, CaseFailed) and words in str(err), (behaviour, err)
        assert check(impl, "com.microsoft.Gelu", "Gelu/f64/X[4,3]/reject-dtype") is None


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_loader_that_computes_on_the_cpu_fails(tmp_path, runtime):
    impl = _module(tmp_path, "cpu.mjs", ON_THE_CPU, runtime)
    err = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")
    assert isinstance(err, CaseFailed) and NOTHING in str(err), err
    own = _module(
        tmp_path / "own",
        "own.mjs",
        GETKERNEL.format(own="{ ...options, device: undefined }", body="return k(inputs, opts);"),
        runtime,
    )
    err = check(own, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")  # the reference loader on a device of its own
    # (Node's default adapter request finds none on llvmpipe here: it fails on that instead of on the evidence)
    assert isinstance(err, CaseFailed) and (NOTHING in str(err) or "gave no adapter" in str(err)), err


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_work_other_than_the_plans_fails_naming_it(tmp_path, runtime):
    for plant in sorted(WORK_PLANTS):
        file, edits, words = WORK_PLANTS[plant]
        impl = loader_impl(planted(tmp_path / plant, file, edits), webgpu=runtime)
        err = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")
        err = err[0] if isinstance(err, tuple) else err
        assert isinstance(err, CaseFailed), (plant, err)
        assert all(part in str(err) for part in ([words] if isinstance(words, str) else words)), (plant, err)
