"""The implementation interface is declared in one place (conformance.certify.implementations): what every
implementation offers, what one held to the device model offers besides, and each optional member's default; the
checker picks what an implementation is held to once (conformance.certify.rules; issue 52, item 3)."""

from __future__ import annotations

import pytest

from conformance.certify.checker import Checker
from conformance.certify.implementations import Hooks, ImplResult, ManifestImplementation, load_implementation
from conformance.certify.rules import ContractRules, DeviceModelRules
from conformance.errors import ConformanceError


class Bare:
    """The required members only."""

    name, has_variants = "bare", False

    def available(self):
        return None

    def prepare(self, package):
        pass

    def run(self, case, inputs):
        return ImplResult({})


class HalfModel(Bare):
    """Says it follows the device model, offers none of what that asks."""

    name, follows_device_model = "half-model", True


def test_an_implementation_without_the_optional_members_gets_their_defaults():
    hooks = Hooks(Bare())
    assert hooks.device_model is None and hooks.device_features is None and hooks.provider is None
    assert hooks.describe() == {"implementation": "bare", "provider": None, "available": None}
    assert hooks.compilations() is None and not hooks.makes_repros


def test_what_an_implementation_is_held_to_is_chosen_once_from_it():
    assert isinstance(Checker(Bare()).rules, ContractRules)
    assert isinstance(Checker(ManifestImplementation("vulkan")).rules, DeviceModelRules)  # opens no device


def test_following_the_device_model_without_offering_it_is_refused_at_load():
    with pytest.raises(ConformanceError, match="lacks profile, plan, dispatch_count"):
        load_implementation(f"{__name__}:HalfModel")
