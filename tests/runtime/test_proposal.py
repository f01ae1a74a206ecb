"""Proposals (specs/proposals/): applied to scratch copies, then planned, run and certified like any package."""

import json

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from conformance.engine.package import REPO_SPECS, find_package_dirs
from conformance.errors import ExpressionError, ManifestError
from conformance.tools import proposal
from tests.runtime.test_numerics import LARGE, RNG, check

PACKED_F16 = REPO_SPECS / "proposals" / "packed-f16.json"


@pytest.fixture(scope="module")
def packed_specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("packed")
    for d in find_package_dirs(REPO_SPECS):
        proposal.apply(d, PACKED_F16, root)
    return root


@pytest.fixture(scope="module")
def packed(packed_specs, device):
    return {d.name.split(".")[2]: load_kernel(d, device=device) for d in find_package_dirs(packed_specs)}


CHOICES = [  # (package, X shape, bias?, dtype) -> variant, as a reader derives it from manifest + proposal
    ("FastGelu", (4, 16), True, "float16", "vec8_f16_bias"),
    ("FastGelu", (4, 12), True, "float16", "vec4_bias"),  # hidden % 8 != 0
    ("FastGelu", (3, 16), False, "float16", "vec8_f16_no_bias"),
    ("FastGelu", (12,), False, "float16", "vec4_no_bias"),  # numel % 8 != 0
    ("FastGelu", (8, 12), False, "float16", "vec8_f16_no_bias"),  # without a bias the row length is free
    ("FastGelu", (4, 16), True, "float32", "vec4_bias"),  # packing is for f16 only
    ("Gelu", (2, 8), False, "float16", "vec8_f16"),
    ("Gelu", (12,), False, "float16", "vec4"),
    ("Gelu", (16,), False, "float32", "vec4"),
    ("Gelu", (0,), False, "float16", "scalar"),  # empty: nothing to pack
]


@pytest.mark.parametrize("package,shape,bias,dtype,variant", CHOICES)
def test_packed_variants_are_chosen_exactly_where_the_proposal_says(packed, package, shape, bias, dtype, variant):
    args = {"X": (shape, dtype)}
    if bias:
        args["bias"] = ((shape[-1],), dtype)
    assert packed[package].plan(BASELINE, **args).variant == variant


def test_packed_plan_binds_eight_f16_per_vec4_u32(packed):
    plan = packed["FastGelu"].plan(BASELINE, X=((4, 16), "float16"), bias=((16,), "float16"))
    (main,) = plan.passes
    by_name = {b.name: b for b in main.bindings}
    assert "array<vec4<u32>>" in by_name["x"].declaration and "array<vec4<u32>, 2>" in by_name["bias"].declaration
    assert by_name["x"].byte_size == 4 * 16 * 2 and by_name["bias"].byte_size == 16 * 2
    assert main.dispatch.threads == 4 * 16 // 8 and main.constants["packedF16"] is True


@pytest.mark.parametrize("shape", [(64, 256), (3, 8 * 257), (1, 8)])
def test_packed_fast_gelu_matches_reference_with_and_without_bias(packed, shape):
    x = RNG.normal(0, 3, shape).astype(np.float16)
    for bias in (RNG.normal(0, 1, shape[-1]).astype(np.float16), None):
        plan, _, _ = check(packed["FastGelu"], X=x, bias=bias)
        assert plan.variant.startswith("vec8_f16")


@pytest.mark.parametrize("package", ["FastGelu", "Gelu"])
def test_packed_variants_are_right_at_large_magnitudes_and_in_the_tails(packed, package):
    mags = np.array(LARGE[np.float16], dtype=np.float64)
    tails = np.linspace(-12, 12, 8 * 97)  # through both clamps (4.6 for f16 erf, 10) and the f16 subnormals
    x = np.concatenate([mags, -mags, [0.0, -0.0], tails]).astype(np.float16)
    x = np.resize(x, len(x) // 8 * 8 + 8)
    plan, run, _ = check(packed[package], X=x)
    assert plan.variant.startswith("vec8_f16") and np.isfinite(run.outputs["Y"]).all()


def generated_case_outcomes(pytester, specs, selection: str) -> dict:
    """pytest's outcome counts for the generated conformance cases of the packages in ``specs`` matching ``-k``."""
    conformance_tests = REPO_SPECS.parent / "conformance" / "test_kernels.py"
    result = pytester.runpytest_inprocess(
        str(conformance_tests), f"--specs={specs}", "--device=vulkan", "-p", "no:cacheprovider", "-q", "-k", selection
    )
    return result.parseoutcomes()


def test_proposal_packages_pass_their_generated_conformance_cases(pytester, packed_specs):
    outcomes = generated_case_outcomes(pytester, packed_specs, "vec8 or reject")
    assert outcomes["passed"] > 40 and "failed" not in outcomes and "error" not in outcomes


def _write(tmp_path, doc):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_proposal_only_adds(tmp_path):
    path = _write(tmp_path, {"packages": {"com.microsoft.Gelu": {"variants": [{"id": "vec4"}]}}})
    with pytest.raises(ManifestError, match="variant 'vec4' already exists") as err:
        proposal.apply(REPO_SPECS / "com.microsoft.Gelu", path, tmp_path)
    assert err.value.pointer == "/packages/com.microsoft.Gelu/variants/0/id" and err.value.file == str(path)


def test_a_proposal_that_redefines_a_derive_rule_is_refused(tmp_path):
    path = _write(tmp_path, {"packages": {"com.microsoft.FastGelu": {"derive": {"baseOk": "true"}}}})
    with pytest.raises(ManifestError, match="derive 'baseOk' already exists"):
        proposal.apply(REPO_SPECS / "com.microsoft.FastGelu", path, tmp_path)


@pytest.mark.parametrize(
    "doc,pointer",
    [
        ({"packages": []}, "/packages"),
        ({"packages": {"com.microsoft.Gelu": {"constants": {}}}}, "/packages/com.microsoft.Gelu/constants"),
        ({"packages": {"com.microsoft.Gelu": {"variants": {}}}}, "/packages/com.microsoft.Gelu/variants"),
        ({"packages": {"com.microsoft.Gelu": {"variants": [7]}}}, "/packages/com.microsoft.Gelu/variants/0"),
        ({"packages": {"com.microsoft.Gelu": []}}, "/packages/com.microsoft.Gelu"),
    ],
)
def test_a_malformed_proposal_names_the_file_and_pointer(tmp_path, doc, pointer):
    path = _write(tmp_path, doc)
    with pytest.raises(ManifestError) as err:
        proposal.apply(REPO_SPECS / "com.microsoft.Gelu", path, tmp_path)
    assert err.value.pointer == pointer and str(path) in str(err.value)


def test_a_package_the_proposal_does_not_name_is_copied_unchanged(tmp_path):
    path = _write(tmp_path, {"packages": {"com.example.Other": {"variants": []}}})
    dst = proposal.apply(REPO_SPECS / "com.microsoft.Gelu", path, tmp_path)
    assert (dst / "manifest.json").read_bytes() == (REPO_SPECS / "com.microsoft.Gelu" / "manifest.json").read_bytes()


@pytest.mark.parametrize(
    "element_type,dtype,message",
    [
        ("vec4<f32>", "float16", "packing 2x16float needs u32, vec2<u32> or vec4<u32>, not vec4<f32>"),
        ("vec3<u32>", "float16", "packing 2x16float needs u32, vec2<u32> or vec4<u32>, not vec3<u32>"),
        ("vec4<u32>", "float32", "element type vec4<u32> (packing 2x16float holds f16) does not hold argument 'X'"),
    ],
)
def test_packing_is_checked_against_the_element_type_and_the_argument(
    packed_specs, tmp_path, element_type, dtype, message
):
    import shutil

    pkg = tmp_path / "g"
    shutil.copytree(packed_specs / "com.microsoft.Gelu.packed-f16", pkg)
    raw = json.loads((pkg / "manifest.json").read_text())
    variant = next(v for v in raw["variants"] if v["id"] == "vec8_f16")
    variant["passes"][0]["bindings"][0]["elementType"] = element_type
    variant["when"] = [w for w in variant["when"] if "f16" not in w]  # let f32 calls reach the binding check
    (pkg / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        load_kernel(pkg).plan(BASELINE, X=((16,), dtype))
    assert err.value.pointer.startswith("/variants/2/passes/0/bindings/0")


def test_a_proposal_naming_no_package_is_refused_before_anything_is_measured(tmp_path):
    path = _write(tmp_path, {"packages": {"com.microsoft.FastGeLU": {"variants": []}}})
    with pytest.raises(ManifestError, match="op 'com.microsoft.FastGeLU' names none of the packages") as err:
        proposal.apply_all(find_package_dirs(REPO_SPECS), path, tmp_path)
    assert err.value.pointer == "/packages/com.microsoft.FastGeLU"


def test_bench_refuses_to_write_tuning_for_a_proposal(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "bench",
            "--proposal",
            str(PACKED_F16),
            "--write-tuning",
            "--max-elements",
            "4096",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0 and "--write-tuning would store tuning for variants that do not ship" in out.stderr
