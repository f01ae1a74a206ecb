"""What the manifest plans for a case: for the device under test, and as the op's tolerance model sees it.

A case whose profile the device does not meet is planned for the device.

The golden files record each call's outcome under the reference profiles (``baseline`` has ``shader-f16`` and
WebGPU's default limits). A device that lacks a feature or limit the manifest gates gets the outcome the manifest
gives *on that device*: the same call planned for the case's profile cut down to the device (``within``). An f16
call on a device without ``shader-f16`` is then asserted rejected with the manifest's own reason, not skipped.

A tolerance model may depend on the plan (its variant, tunables and constants: :func:`plan_context`).
"""

from __future__ import annotations

import dataclasses

from cases.calls import outcome_on
from conformance.engine.planner import Planner
from conformance.errors import ContractError, ExpressionError
from conformance.ops import PlanContext


def plan_for_device(case, planner: Planner, device_profile) -> tuple[object, str | None]:
    """(the case with its profile and expectation for this device, what changed and why, or None if nothing)."""
    lacking = case.profile.exceeds(device_profile)
    if not lacking:
        return case, None
    profile = case.profile.within(device_profile)
    expect = outcome_on(planner, case.call_args(), profile, dict(case.tunables))
    moved = dataclasses.replace(case, profile=profile, expect=expect)
    return moved, describe_change(case.expect, expect, lacking)


def describe_change(old: dict, new: dict, lacking: list[str]) -> str:
    why = f"device lacks {', '.join(lacking)}"
    if old == new:
        return f"expectation unchanged ({why})"
    if old["outcome"] == "accepted" and new["outcome"] == "rejected":
        return f"call rejected ({new['reason']}), was variant {old['variant']!r}: {why}"
    if old["outcome"] == "rejected" and new["outcome"] == "accepted":
        return f"call accepted as variant {new['variant']!r}, was rejected ({old['reason']}): {why}"
    if old["outcome"] == "accepted" and old["variant"] != new["variant"]:
        return f"variant {new['variant']!r}, was {old['variant']!r}: {why}"
    return f"expectation changed (dispatch, outputs or rejection details): {why}"


def plan_context(planner: Planner, case) -> PlanContext | None:
    """Variant, tunables (defaults and overrides) and constants of the manifest's plan for ``case`` on its profile;
    None where the manifest does not plan it (the value check of such a call uses a plan-free tolerance)."""
    try:
        call = planner.call_for(case.call_args(), case.profile, case.tunables)
        plan = planner.plan(call)
    except (ContractError, ExpressionError):
        return None
    constants = dict(plan.passes[0].constants) if plan.passes else {}
    return PlanContext(plan.variant, dict(call.tunables), constants)
