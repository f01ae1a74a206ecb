"""Implementations that check nothing, each for a reason of its own (tests/certify/test_nothing_checked.py): the
suite must say so and fail, never report "conforms"."""

from conformance.certify.implementations import NotSupported


class Unavailable:
    """Cannot run on this machine at all."""

    name, has_variants = "unavailable", False

    def available(self):
        return "unavailable: the frobnicator library is not installed (pip install frobnicator)"

    def prepare(self, package):
        raise AssertionError("prepare() of an unavailable implementation must not be called")

    def run(self, case, inputs):
        raise AssertionError("run() of an unavailable implementation must not be called")


class SupportsNothing:
    """Available, but implements none of the packages."""

    name, has_variants = "supports-nothing", False

    def available(self):
        return None

    def prepare(self, package):
        raise NotSupported(f"supports-nothing implements no package, not {package.name}")

    def run(self, case, inputs):
        raise AssertionError("run() after prepare() refused the package must not be called")
