"""A call as cases describe it (hashable), and what the engine makes of it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cases.profiles import PROFILE_ORDER, profile_named
from conformance.engine.dtypes import ITEM_BYTES, WGSL_DTYPE
from conformance.engine.manifest import Manifest
from conformance.engine.planner import Planner
from conformance.engine.profile import DeviceProfile
from conformance.errors import ContractError, ExpressionError, NoVariantError

#: Input bytes above which a case is heavy (the conformance run may skip it).
HEAVY_BYTES = 64 * 2**20


@dataclass(frozen=True)
class CallSpec:
    """Inputs in manifest order as (role, shape, dtype) with shape None when absent; profile by name
    (``cases.profiles.profile_named``); tunables and attributes passed (not the defaults), sorted by name."""

    inputs: tuple[tuple[str, tuple[int, ...] | None, str | None], ...]
    profile: str = "baseline"
    tunables: tuple[tuple[str, int], ...] = ()
    attributes: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def of(
        manifest: Manifest,
        args: dict[str, tuple | None],
        profile: str = "baseline",
        tunables: dict[str, int] | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> "CallSpec":
        rows = []
        for spec in manifest.inputs:
            arg = args.get(spec.role)
            rows.append((spec.role, None, None) if arg is None else (spec.role, tuple(arg[0]), arg[1]))
        return CallSpec(
            tuple(rows), profile, tuple(sorted((tunables or {}).items())), tuple(sorted((attributes or {}).items()))
        )

    def args(self) -> dict[str, tuple | None]:
        """The tensor arguments, role -> (shape, dtype) or None."""
        return {role: None if shape is None else (shape, dtype) for role, shape, dtype in self.inputs}

    def call_args(self) -> dict[str, Any]:
        """What ``make_call`` takes: the tensor arguments and the attributes passed, by name."""
        return {**self.args(), **dict(self.attributes)}

    def arg(self, role: str):
        return self.args().get(role)

    @property
    def numel(self) -> int:
        return sum(math.prod(s) for _, s, _ in self.inputs if s is not None)

    @property
    def nbytes(self) -> int:
        return sum(math.prod(s) * ITEM_BYTES.get(d, 8) for _, s, d in self.inputs if s is not None)

    @property
    def heavy(self) -> bool:
        return self.nbytes > HEAVY_BYTES

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d for _, s, d in self.inputs if s is not None))

    def cost(self) -> tuple:
        """Cheaper first: light, few elements, baseline profile, default tunables, low rank."""
        return (
            self.heavy,
            self.numel,
            PROFILE_ORDER.get(self.profile, 99),
            len(self.tunables),
            len(self.attributes),
            sum(len(s) for _, s, _ in self.inputs if s is not None),
        )

    def with_profile(self, profile: str) -> "CallSpec":
        return CallSpec(self.inputs, profile, self.tunables, self.attributes)


def scope_of(planner: Planner, spec: CallSpec):
    """The expression scope the planner would build, or None when the call fails before selection."""
    try:
        return planner.scope(planner.call_for(spec.call_args(), profile_named(spec.profile), spec.tunables))
    except (ContractError, ExpressionError):
        return None


def outcome(planner: Planner, spec: CallSpec) -> dict[str, Any]:
    """The expected outcome as the golden files record it."""
    return outcome_on(planner, spec.call_args(), profile_named(spec.profile), dict(spec.tunables))


def outcome_on(planner: Planner, args: dict, profile: DeviceProfile, tunables: dict) -> dict[str, Any]:
    """The expected outcome of the call ``args`` (tensors and attributes by name) planned for ``profile`` (any
    profile, a device's own too)."""
    try:
        plan = planner.plan_case(args, profile, tunables)
    except NoVariantError as exc:
        out = {"outcome": "rejected", "reason": exc.reason, "detail": dict(exc.failures)}
        if exc.argument:
            out["argument"] = exc.argument
        return out
    except ContractError as exc:
        return {"outcome": "rejected", "reason": exc.reason, "detail": exc.argument}
    except ExpressionError as exc:  # a manifest defect, not a rejection: lint reports it, pytest fails the case
        return planning_failed(exc)
    d = plan.as_dict()
    return {
        "outcome": "accepted",
        "variant": d["variant"],
        "passes": [{"name": p["name"], **p["dispatch"]} for p in d["passes"]],
        "outputs": d["outputs"],
    }


def planning_failed(exc: ExpressionError) -> dict[str, Any]:
    """The outcome of a call whose planning raised: an expression of the manifest failed to evaluate for it. Not a
    rejection (the manifest never decided to refuse the call), so no case family treats it as one."""
    return {"outcome": PLANNING_FAILED, "pointer": exc.pointer, "message": exc.detail}


#: The outcome of a call whose planning failed (see ``planning_failed``).
PLANNING_FAILED = "planning-failed"


def accepted(planner: Planner, spec: CallSpec) -> bool:
    """Whether the manifest takes the call; a call whose planning fails counts as taken (the manifest did not
    refuse it), so the families keep the calls around it and the case records the failure."""
    try:
        planner.plan_case(spec.call_args(), profile_named(spec.profile), spec.tunables)
        return True
    except ContractError:
        return False
    except ExpressionError:
        return True


def wgsl(dtype: str) -> str:
    return WGSL_DTYPE.get(dtype, dtype)
