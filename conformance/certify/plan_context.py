"""The plan the manifest makes for a case, as a tolerance model sees it (``conformance.ops.PlanContext``)."""

from __future__ import annotations

from conformance.engine.call import make_call
from conformance.engine.planner import Planner
from conformance.errors import ContractError, ExpressionError
from conformance.ops import PlanContext


def plan_context(planner: Planner, case) -> PlanContext | None:
    """Variant, tunables (defaults and overrides) and constants of the manifest's plan for ``case`` on its profile;
    None where the manifest does not plan it (the value check of such a call uses a plan-free tolerance)."""
    try:
        call = make_call(planner.manifest, case.call_args(), case.profile, dict(case.tunables))
        plan = planner.plan(call)
    except (ContractError, ExpressionError):
        return None
    constants = dict(plan.passes[0].constants) if plan.passes else {}
    return PlanContext(plan.variant, dict(call.tunables), constants)
