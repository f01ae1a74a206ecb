"""The named device profiles cases run on, and their YAML form (what differs from BASELINE)."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from conformance.engine.profile import BASELINE, LIMIT_NAMES, DeviceProfile

#: Small limits make limit cases run for real on little data (a 4 KiB storage binding, 4 workgroups per dimension).
PROFILES: dict[str, DeviceProfile] = {
    "baseline": BASELINE,
    "no-f16": BASELINE.restricted("no-f16", drop_features={"shader-f16"}),
    "small-storage": BASELINE.restricted("small-storage", limits={"maxStorageBufferBindingSize": 4096}),
    "small-dispatch": BASELINE.restricted("small-dispatch", limits={"maxComputeWorkgroupsPerDimension": 4}),
    "small-workgroup": BASELINE.restricted(
        "small-workgroup", limits={"maxComputeInvocationsPerWorkgroup": 64, "maxComputeWorkgroupSizeX": 64}
    ),
    "subgroups": replace(BASELINE, name="subgroups", features=BASELINE.features | {"subgroups"}),
}

#: Profiles each accepted baseline call is planned on again (generate.twin_items): where a manifest selects
#: another variant there (variants for an optional feature), the call is a case on that profile too.
TWIN_PROFILES = ("subgroups",)

PROFILE_ORDER = {name: i for i, name in enumerate(PROFILES)}


def limit_profile_name(limit: str, value: int) -> str:
    """The name of the baseline profile with one limit set to ``value`` (a family derives these from the
    manifest's comparisons with a device limit): ``<limit>=<value>``."""
    return f"{limit}={value}"


@lru_cache(maxsize=None)
def profile_named(name: str) -> DeviceProfile:
    """A named profile of PROFILES, or a derived one: ``<limit>=<value>`` (the baseline with that limit)."""
    if name in PROFILES:
        return PROFILES[name]
    limit, sep, value = name.partition("=")
    if sep and limit in LIMIT_NAMES and value.isdigit():
        return BASELINE.restricted(name, limits={limit: int(value)})
    raise KeyError(f"unknown profile {name!r} (known: {', '.join(PROFILES)}, or <limit>=<value>)")


def profile_to_dict(profile: DeviceProfile) -> dict:
    out: dict = {"name": profile.name}
    limits = {k: v for k, v in sorted(profile.limits.items()) if BASELINE.limits.get(k) != v}
    if limits:
        out["limits"] = limits
    if BASELINE.features - profile.features:
        out["drop_features"] = sorted(BASELINE.features - profile.features)
    if profile.features - BASELINE.features:
        out["add_features"] = sorted(profile.features - BASELINE.features)
    return out


def profile_from_dict(data: dict) -> DeviceProfile:
    profile = BASELINE.restricted(
        data["name"], limits=data.get("limits"), drop_features=set(data.get("drop_features", ()))
    )
    return replace(profile, features=profile.features | frozenset(data.get("add_features", ())))
