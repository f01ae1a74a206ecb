"""The manifest extension for op attributes: schema, engine checks, per-call values, expressions, uniforms."""

from __future__ import annotations

import json
import struct
import subprocess

import numpy as np
import pytest

from conformance import BASELINE, ContractError, ManifestError, NoVariantError, load_kernel
from conformance.engine.call import make_call
from conformance.engine.manifest import Manifest
from conformance.engine.package import REPO_SPECS, Package
from conformance.gpu.kernel import Kernel

from .conftest import LAYERNORM, ROOT, SOFTMAX

SEEDS = ("com.microsoft.FastGelu", "com.microsoft.Gelu")
LN_CALL = dict(X=((4, 8), "float32"), scale=((8,), "float32"))


def raw(name: str) -> dict:
    return json.loads((REPO_SPECS / name / "manifest.json").read_text())


def kernel_from(manifest: dict, name: str = LAYERNORM) -> Kernel:
    return Kernel(Package(REPO_SPECS / name, Manifest(manifest, file="m.json")))


def problems(manifest: dict) -> list[str]:
    with pytest.raises(ManifestError) as info:
        Manifest(manifest, file="m.json")
    return [str(p) for p in getattr(info.value, "problems", [info.value])]


# -- backward compatibility ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_seeds_have_no_attributes_and_are_unchanged_in_git(seed):
    assert "attributes" not in raw(seed)
    m = Manifest(raw(seed), file="m.json")
    assert m.attributes == {}
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", f"specs/{seed}"], cwd=ROOT, capture_output=True, text=True
    )
    assert status.returncode != 0 or status.stdout == ""


def test_a_call_without_attributes_sees_an_empty_namespace():
    k = load_kernel("com.microsoft.Gelu", version=1)
    call = make_call(k.manifest, {"X": ((8,), "float32")}, BASELINE)
    assert call.attributes == {}
    assert k.planner.scope(call)["attributes"] == {}


# -- declaration: schema and engine ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, message",
    [
        ({"type": "double"}, "schema:"),
        ({"type": "float", "default": "1e-5"}, "schema:"),
        ({"type": "int", "default": 0.5}, "schema:"),
        ({"type": "bool", "default": 1}, "schema:"),
        ({"type": "float", "default": True}, "schema:"),
        ({"type": "float", "min": 0}, "schema:"),
        ({"type": "int", "default": 2**70}, "outside the int64 range"),
        ({"type": "float", "default": 10**400}, "not finite"),
    ],
)
def test_declarations_are_checked(spec, message):
    m = raw(LAYERNORM)
    m["attributes"]["extra"] = spec
    assert any(message in p for p in problems(m)), problems(m)


def test_names_that_calls_could_not_tell_apart_are_refused():
    m = raw(LAYERNORM)
    m["attributes"]["scale"] = {"type": "float", "default": 1.0}
    m["attributes"]["profile"] = {"type": "int", "default": 0}
    found = problems(m)
    assert any("/attributes/scale" in p and "tensor role" in p for p in found)
    assert any("/attributes/profile" in p and "reserved" in p for p in found)


def test_expressions_may_name_declared_attributes_only():
    m = raw(LAYERNORM)
    m["derive"]["epsilonOk"] = "attributes.epsilon > 0 and attributes.eps < 1"
    assert any("/derive/epsilonOk" in p and "unknown attribute 'eps'" in p for p in problems(m))
    m = raw(SOFTMAX)
    del m["attributes"]
    assert any("unknown attribute 'axis'" in p for p in problems(m))


def test_an_integer_default_of_a_float_attribute_is_a_float():
    m = raw(LAYERNORM)
    m["attributes"]["epsilon"]["default"] = 1
    assert kernel_from(m).manifest.attributes["epsilon"].default == 1.0
    assert isinstance(kernel_from(m).manifest.attributes["epsilon"].default, float)


# -- calls ---------------------------------------------------------------------------------------------------
def test_defaults_fill_in_and_values_pass_per_call(layernorm):
    call = make_call(layernorm.manifest, LN_CALL, BASELINE)
    assert call.attributes == {"axis": -1, "epsilon": 1e-5}
    call = make_call(layernorm.manifest, {**LN_CALL, "epsilon": np.float32(0.25), "axis": np.int64(1)}, BASELINE)
    assert call.attributes == {"axis": 1, "epsilon": 0.25}
    assert type(call.attributes["axis"]) is int and type(call.attributes["epsilon"]) is float


def test_an_attribute_reaches_the_uniform_as_f32(layernorm):
    plan = layernorm.plan(BASELINE, **LN_CALL, epsilon=0.125)
    params = next(b for b in plan.passes[0].bindings if b.name == "params")
    assert dict((n, v) for n, _, v in params.fields)["epsilon"] == 0.125
    rows, items, eps, inv = struct.unpack("<IIff", params.uniform_bytes)
    assert (rows, items, eps, inv) == (4, 2, 0.125, 0.125)
    # a new value is a new uniform, not a new pipeline
    other = layernorm.plan(BASELINE, **LN_CALL, epsilon=0.5)
    assert other.passes[0].cache_key() == plan.passes[0].cache_key()


@pytest.mark.parametrize(
    "value, reason",
    [
        ("1e-5", "attribute"),
        (True, "attribute"),
        (float("nan"), "attribute"),
        (float("inf"), "attribute"),
        (10**400, "attribute"),
        (None, "attribute"),
    ],
)
def test_values_of_the_wrong_type_are_contract_errors(layernorm, value, reason):
    with pytest.raises(ContractError) as info:
        layernorm.plan(BASELINE, **LN_CALL, epsilon=value)
    assert info.value.reason == reason and info.value.argument == "epsilon"
    with pytest.raises(ContractError) as info:
        layernorm.plan(BASELINE, **LN_CALL, axis=1.0)
    assert info.value.reason == "attribute" and "expected an int" in str(info.value)


def test_unknown_keywords_name_the_inputs_and_the_attributes(layernorm):
    with pytest.raises(ContractError) as info:
        layernorm.plan(BASELINE, **LN_CALL, eps=1e-6)
    assert info.value.reason == "unknown-argument"
    assert "inputs are X, scale, bias; attributes are axis, epsilon" in str(info.value)


def test_a_required_attribute_must_be_passed():
    m = raw(LAYERNORM)
    del m["attributes"]["epsilon"]["default"]
    k = kernel_from(m)
    with pytest.raises(ContractError) as info:
        k.plan(BASELINE, **LN_CALL)
    assert info.value.reason == "missing-attribute" and info.value.argument == "epsilon"
    assert k.plan(BASELINE, **LN_CALL, epsilon=1e-3).variant == "vec4"


def test_when_predicates_read_attributes(layernorm):
    assert layernorm.plan(BASELINE, **LN_CALL, axis=1).variant == "vec4"  # rank - 1 is the last axis too
    with pytest.raises(NoVariantError) as info:
        layernorm.plan(BASELINE, **LN_CALL, axis=0)
    assert "axisOk is false" in info.value.failures["vec4"] and "attributes.axis = 0" in info.value.failures["vec4"]
    with pytest.raises(NoVariantError) as info:
        layernorm.plan(BASELINE, **LN_CALL, epsilon=0.0)
    assert "epsilonOk is false" in info.value.failures["vec4"]


def test_kernel_calls_take_attributes_by_name(layernorm):
    rng = np.random.default_rng(0)
    x, g = rng.normal(size=(3, 8)).astype(np.float32), np.ones(8, np.float32)
    loose, tight = layernorm(X=x, scale=g, epsilon=100.0)["Y"], layernorm(X=x, scale=g)["Y"]
    assert np.abs(loose).max() < 0.5 < np.abs(tight).max()
    with pytest.raises(ContractError):
        layernorm(X=x, scale=g, epsilon="big")
    with pytest.raises(ContractError) as info:
        layernorm(X=x, scale=g, bias=1.0)  # tensors must still be arrays
    assert info.value.reason == "argument"
