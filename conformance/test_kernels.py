"""The conformance tests: one per case generated from each package's manifest (see plugin.py)."""

from conformance.plugin import run_case


def test_case(request, conformance_case):
    run_case(request, conformance_case)
