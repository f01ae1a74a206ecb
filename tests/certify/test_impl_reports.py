"""What an outside implementation reports of a call reaches the verdict (cost, provider, console lines), and a
refusal of what its device cannot do (f16 without shader-f16) is not applicable, while running it is checked."""

import numpy as np
import pytest

from cases.golden import CASES_DIR, load_matching_golden
from conformance.certify.checker import Checker
from conformance.certify.implementations import ImplResult, Rejected
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, verdict_for
from conformance.engine.package import load_package
from conformance.ops import record_for


@pytest.fixture(scope="module")
def gelu():
    package = load_package("com.microsoft.Gelu")
    found, why = load_matching_golden(CASES_DIR, package)
    assert found is not None, why
    return package, {c.id: c for c in found}


class Reporting:
    """Gelu computed in NumPy, or zeros (``zeros``), or refused (``refuse``); says what a web page would."""

    name, has_variants = "reporting", False

    def __init__(self, *, zeros=False, refuse=False, features=None, console=()):
        self.zeros, self.refuse, self.device_features, self.console = zeros, refuse, features, list(console)

    def available(self):
        return None

    def prepare(self, package):
        pass

    def run(self, case, inputs):
        report = {"provider": "FakeProvider", "run_ms": 1.5, **({"console": self.console} if self.console else {})}
        if self.refuse:
            raise Rejected("reporting: no f16 here", reason="runtime", report=report)
        x = inputs["X"]
        y = np.zeros_like(x) if self.zeros else record_for(case.package).compute(inputs, None)["Y"].astype(x.dtype)
        return ImplResult({"Y": y}, extra={"report": report})


def check(impl, gelu, case_id):
    package, found = gelu
    verdict = verdict_for(found[case_id])
    Checker(impl).check(found[case_id], package, verdict)
    return verdict


def test_the_report_of_a_call_is_the_verdicts_impl_entry(gelu):
    verdict = check(Reporting(), gelu, "Gelu/f32/X[64,36]/vec4#normal1")
    assert verdict.impl == {"provider": "FakeProvider", "run_ms": 1.5}
    assert verdict.as_dict()["impl"] == {"provider": "FakeProvider", "run_ms": 1.5}


def test_a_console_line_comes_with_the_failure_it_accompanied(gelu):
    line = "'f16' type used without 'f16' extension enabled"
    with pytest.raises(CaseFailed, match="differs from the reference") as err:
        check(Reporting(zeros=True, console=[line]), gelu, "Gelu/f32/X[64,36]/vec4#normal1")
    assert f"the page's console said, with this result:\n    {line}" in str(err.value)


def test_refusing_f16_on_a_device_without_shader_f16_is_not_applicable_but_wrong_values_fail(gelu):
    case_id = "Gelu/f16/X[2,2,2,2,2,4]/vec4"
    with pytest.raises(CaseNotApplicable, match="on a device without shader-f16: reporting: no f16 here"):
        check(Reporting(refuse=True, features=frozenset()), gelu, case_id)
    with pytest.raises(CaseFailed, match="differs from the reference"):
        check(Reporting(zeros=True, features=frozenset()), gelu, case_id)
    # a device that has shader-f16 (or an implementation that says nothing of its device) must run it
    for features in (frozenset({"shader-f16"}), None):
        with pytest.raises(CaseFailed, match="rejects a call the manifest accepts") as err:
            check(Reporting(refuse=True, features=features), gelu, case_id)
        assert err.value.divergence == "rejects-accepted"
