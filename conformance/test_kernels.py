"""The conformance tests: one per case of each package under ``--specs`` (see conformance.plugin.session)."""

from conformance.plugin.session import runner_of


def pytest_generate_tests(metafunc):
    if "conformance_case" in metafunc.fixturenames:
        runner_of(metafunc.config).parametrize(metafunc)


def test_case(request, conformance_case):
    runner_of(request.config).run_case(request, conformance_case)
