"""The mutation tool on a handful of mutants."""

import json
import shutil

import pytest

from conformance.tools import mutate
from conformance.tools.export import build_test
from conformance.engine.package import load_package

TEMPLATE = "elementwise-bias-gelu.wgsl.jinja"


@pytest.fixture(scope="module")
def fast_mutants():
    pkg = load_package("com.microsoft.FastGelu")
    ms = mutate.manifest_mutants("FastGelu", pkg.name, json.loads((pkg.root / "manifest.json").read_text()))
    ms += mutate.template_mutants("FastGelu", pkg.name, TEMPLATE, (pkg.root / TEMPLATE).read_text())
    return {m.id: m for m in ms}


def test_every_operator_family_is_generated(fast_mutants):
    kinds = {m.kind for m in fast_mutants.values()}
    assert {"arith", "constant", "bounds", "tail-guard", "bias-dropped", "bias-index", "erf-tanh", "f16-f32",
            "priority", "when-dropped", "when-negated", "derive"} <= kinds
    exclusive = fast_mutants["FastGelu/manifest/priority:vec4_bias<->vec4_no_bias"]
    assert exclusive.status == "equivalent" and "present.bias" in exclusive.equivalence


def test_unrendered_template_text_is_equivalent(tmp_path):
    pkg = load_package("com.microsoft.Gelu")
    text = (pkg.root / TEMPLATE).read_text()
    ms = [m for m in mutate.template_mutants("Gelu", pkg.name, TEMPLATE, text)
          if m.kind == "bias-dropped" or m.id.endswith("erf-tanh/swap")]
    mutate.mark_unrendered(pkg.root, ms)
    assert all(m.status == "equivalent" for m in ms if m.kind == "bias-dropped")      # Gelu has no bias
    assert next(m for m in ms if m.id.endswith("erf-tanh/swap")).status == "pending"  # this one is rendered


@pytest.mark.slow
def test_a_mutant_is_killed_by_a_named_case(fast_mutants, tmp_path):
    pkg = load_package("com.microsoft.Gelu")
    m = next(m for m in mutate.template_mutants("Gelu", pkg.name, TEMPLATE, (pkg.root / TEMPLATE).read_text())
             if m.id.endswith("erf-tanh/swap"))
    test_json = tmp_path / "test.json"
    test_json.write_text(json.dumps(build_test(pkg)))
    done = mutate.run_mutant(m, pkg.root, test_json, tmp_path, timeout=300)
    assert done.status == "killed" and done.killed_by.startswith("test.json/Gelu/"), done
    result = mutate.summarize([done], {}, 1.0, 1)
    assert result["kill_rate"] == 1.0 and "Killed mutants" in mutate.markdown(result)


@pytest.mark.slow
def test_worker_kills_a_template_mutant_in_process(tmp_path):
    pkg = load_package("com.microsoft.Gelu")
    m = next(m for m in mutate.template_mutants("Gelu", pkg.name, TEMPLATE, (pkg.root / TEMPLATE).read_text())
             if m.kind == "clamp")
    test_json = tmp_path / "test.json"
    test_json.write_text(json.dumps(build_test(pkg)))
    mutant = tmp_path / "m" / pkg.root.name
    shutil.copytree(pkg.root, mutant)
    (mutant / TEMPLATE).write_text(m._apply((mutant / TEMPLATE).read_text()))
    mid, status, killer, detail, _ = mutate._worker_check(m.id, str(mutant), str(pkg.root), str(test_json))
    assert status == "killed" and killer.startswith("test.json/Gelu/") and "differs from the reference" in detail
    mid, status, killer, _, _ = mutate._worker_check("none", str(pkg.root), str(pkg.root), str(test_json))
    assert status == "survived" and killer is None
