"""What an implementation is held to, chosen once per checker: the device model, or the manifest's contract.

:class:`~conformance.certify.checker.Checker` runs the steps every implementation shares (prepare, inputs, run,
output shapes and guards, values against the reference, stress); where the two contracts differ it asks its rules:

* :class:`DeviceModelRules`, for an implementation that plans by the manifest itself
  (:class:`~conformance.certify.implementations.DeviceModel`: this project's runtime, a JavaScript loader): the
  case as planned for its device (its profile and the case's tunables), the manifest's rejection reason and
  details, no dispatch for a rejected call, the variant and dispatch of every case; every assertion is the device
  model's, so the report counts cases, not assertions;
* :class:`ContractRules`, for any other implementation: the manifest's contract on an unbounded device with the
  default tunables. It must accept what that accepts and reject what it rejects, for any reason; what the manifest
  rejects only under the case's profile or tunables is *not applicable*; variant and dispatch are checked only
  where it reports them on the baseline profile; refusing an accepted call or accepting a rejected one is a
  *divergence*, carried with what a standalone repro needs. Each assertion is counted (``verdict.checks``).

The rules are given the checker and use its shared steps; they import nothing of it.
"""

from __future__ import annotations

import math

import numpy as np

from conformance.certify.device_truth import plan_for_device
from conformance.certify.implementations import DeviceModel, Rejected
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, Expected, Verdict
from conformance.engine.package import Package
from conformance.errors import ContractError, ExpressionError, NoVariantError
from conformance.ops.registry import find

#: Rejection cases whose inputs would exceed this many bytes are checked without allocating them.
MAX_REJECTION_BYTES = 64 << 20


def input_bytes(case) -> int:
    return sum(
        math.prod(shape) * np.dtype(dtype).itemsize
        for shape, dtype in (arg for arg in case.inputs.values() if arg is not None)
    )


def rules_for(checker) -> "DeviceModelRules | ContractRules":
    """The rules ``checker``'s implementation is held to (its ``follows_device_model``, read once)."""
    model = checker.hooks.device_model
    return DeviceModelRules(checker, model) if model is not None else ContractRules(checker)


class DeviceModelRules:
    """An implementation that follows the device model is held to the case as generated for its device."""

    #: Who modified an input, as a failure says it.
    actor = "kernel"
    #: A failure carries no standalone repro: the device model's failures are the suite's own cases to rerun.
    repros = False

    def __init__(self, checker, model: DeviceModel):
        self.checker, self.model = checker, model

    def for_device(self, case, package: Package, verdict: Verdict):
        """The case as the device under test must answer it (see :mod:`conformance.certify.device_truth`)."""
        moved, change = plan_for_device(case, self.checker.planner(package), self.model.profile)
        if change:
            verdict.replanned = change
            verdict.variant = moved.expect.get("variant", "rejected") if moved.accepted else "rejected"
        return moved

    def applies(self, case, package: Package, expect: Expected, verdict: Verdict) -> None:
        """Every case applies to the device model."""

    def done(self, verdict: Verdict) -> None:
        verdict.checks.clear()  # every assertion applies to the device model: the report counts cases

    def plan_checked(self, case) -> bool:
        """Variant and dispatch are checked on every case."""
        return True

    def ran(self, checks: dict) -> None:
        """An accepted call that ran: nothing to count (the device model counts cases)."""

    def refused(self, case, package: Package, expect: Expected, inputs, err: Rejected, verdict: Verdict):
        raise CaseFailed(f"{case.id}: expected variant {expect.variant!r}, but the call was rejected:\n{err}") from None

    def check_rejected(self, case, expect: Expected, verdict: Verdict) -> None:
        """The call is rejected for the manifest's reason, with its details, and dispatches nothing."""
        before = self.model.dispatch_count()
        try:
            if input_bytes(case) > MAX_REJECTION_BYTES:
                variant = self.model.plan(case)
                raise CaseFailed(
                    f"{case.id}: expected a rejection ({expect.reason}: {expect.detail_text()}), but "
                    f"the call was accepted as variant {variant!r}"
                )
            inputs = self.checker.inputs_for(case)
            result = self.checker.run_impl(case, inputs, expect, verdict)
        except Rejected as err:
            check_reason(case, expect, err)
            if self.model.dispatch_count() != before:
                raise CaseFailed(
                    f"{case.id}: the call was rejected ({err.reason}) but "
                    f"{self.model.dispatch_count() - before} dispatch(es) ran"
                ) from None
            verdict.detail = str(err)
            return
        raise CaseFailed(
            f"{case.id}: expected a rejection ({expect.reason}: {expect.detail_text()}), but the "
            f"call was accepted as variant {result.variant!r}"
        )


class ContractRules:
    """An implementation outside the device model is held to the manifest's contract on an unbounded device."""

    actor = "implementation"
    #: A failure carries what a standalone repro needs (``--repro-dir``).
    repros = True

    def __init__(self, checker):
        self.checker = checker
        self.impl = checker.impl
        self.hooks = checker.hooks

    def for_device(self, case, package: Package, verdict: Verdict):
        """The case as generated: its profile only decides whether it applies (:meth:`applies`)."""
        return case

    def applies(self, case, package: Package, expect: Expected, verdict: Verdict) -> None:
        """The case applies only where the contract decides it."""
        contract_ok, contract_why = self.contract(case, package)
        verdict.extra["contract_why"] = contract_why
        if expect.accepted != contract_ok:
            # accepted on the case's profile but not on an unbounded one cannot happen; the reverse is the device model
            verdict.checks.update(contract="not-applicable")
            what = f"profile {case.profile.name!r}" + (f", tunables {case.tunables}" if case.tunables else "")
            raise CaseNotApplicable(
                f"the manifest rejects this call only under {what} ({expect.reason}); "
                f"{self.impl.name} is not bound by the manifest's device model"
            )
        if input_bytes(case) > MAX_REJECTION_BYTES:
            verdict.checks.update(contract="not-applicable")
            raise CaseNotApplicable(f"{input_bytes(case)} bytes of inputs: too large to run here")

    def contract(self, case, package: Package) -> tuple[bool, str | None]:
        """(accepted on an unbounded device with default tunables, the rejection's text or None)."""
        try:
            self.checker.planner(package).plan_case(case.call_args(), self.checker.unbounded)
            return True, None
        except NoVariantError as err:
            first = next(iter(err.failures.items()), ("?", "?"))
            return False, f"no-variant: {first[0]}: {first[1]}"
        except ContractError as err:
            return False, f"{err.reason}: {err}"
        except ExpressionError as err:
            return False, f"expression: {err}"

    def done(self, verdict: Verdict) -> None:
        """Each assertion stays counted."""

    def plan_checked(self, case) -> bool:
        """Variant and dispatch are checked where reported, on the baseline profile with default tunables."""
        return case.profile.name == "baseline" and not case.tunables

    def ran(self, checks: dict) -> None:
        checks.update(contract="passed")

    def refused(self, case, package: Package, expect: Expected, inputs, err: Rejected, verdict: Verdict):
        """A call the manifest accepts, refused: not applicable where the device lacks what it needs, else a
        divergence (rejects-accepted)."""
        checks = verdict.checks
        lacking = self.lacking_features(case)
        if lacking:  # refusing what the device cannot do is right; running it anyway is checked
            checks.update(contract="not-applicable")
            raise CaseNotApplicable(
                f"{self.impl.name} refuses the call on a device without {', '.join(lacking)}: {err}"
            ) from None
        checks.update(contract="failed")
        text = f"{self.impl.name} rejects a call the manifest accepts (as variant {expect.variant!r})"
        raise CaseFailed(
            f"{case.id}: {text}:\n{err}",
            divergence="rejects-accepted",
            failure=self.checker.failure_for(
                "rejects-accepted",
                f"{text}: {err}",
                case,
                inputs,
                lambda: self.checker.contract_outcome(case, package.manifest, inputs, expect),
                {"outcome": "rejected", "message": str(err)},
            ),
        ) from None

    def lacking_features(self, case) -> list[str]:
        """The features a call needs that the implementation's device lacks (where it says which it has, in
        ``device_features``): shader-f16 for an f16 tensor."""
        have = self.hooks.device_features
        if have is None:
            return []
        f16 = any(arg is not None and arg[1] == "float16" for arg in case.inputs.values())
        return ["shader-f16"] if f16 and "shader-f16" not in have else []

    def check_rejected(self, case, expect: Expected, verdict: Verdict) -> None:
        """The call is rejected, for any reason; accepting it is a divergence (accepts-rejected)."""
        checks = verdict.checks
        try:
            inputs = self.checker.inputs_for(case)
            result = self.checker.run_impl(case, inputs, expect, verdict)
        except Rejected as err:
            checks.update(contract="passed")
            verdict.detail = f"rejected, as the manifest does ({expect.reason}): {err}"
            return
        checks.update(contract="failed")
        shapes = ", ".join(f"{r} {y.dtype}{list(y.shape)}" for r, y in result.outputs.items())
        reason = verdict.extra.get("contract_why") or expect.reason or ""
        why = reason.splitlines()[0]
        text = f"{self.impl.name} accepts a call the manifest rejects ({why}); it returned {shapes}" + _interpret(
            case, inputs, result
        )
        raise CaseFailed(
            f"{case.id}: {text}",
            divergence="accepts-rejected",
            failure=self.checker.failure_for(
                "accepts-rejected",
                text,
                case,
                inputs,
                lambda: {"outcome": "rejected", "reason": reason},
                {"outcome": "accepted", "outputs": dict(result.outputs)},
            ),
        )


def check_reason(case, expect: Expected, err: Rejected) -> None:
    """A device-model rejection gives the manifest's reason, and its details: the failed predicate of each variant
    (no-variant) or the argument it names."""
    if err.reason != expect.reason:
        raise CaseFailed(
            f"{case.id}: expected rejection {expect.reason!r} ({expect.detail_text()}), got {err.reason!r}:\n{err}"
        ) from None
    if err.failures and isinstance(expect.detail, dict) and expect.detail:
        if err.failures != dict(expect.detail):
            lines = [
                f"  {vid}: expected {expect.detail.get(vid)!r}\n  {' ' * len(vid)}  got      {err.failures.get(vid)!r}"
                for vid in sorted(set(err.failures) | set(expect.detail))
                if err.failures.get(vid) != expect.detail.get(vid)
            ]
            raise CaseFailed(f"{case.id}: rejected for other reasons than expected:\n" + "\n".join(lines))
    elif (
        err.reason != "expression"
        and isinstance(expect.detail, str)
        and expect.detail
        and err.argument not in (None, expect.detail)
    ):
        raise CaseFailed(
            f"{case.id}: expected the rejection to name argument {expect.detail!r}, it names {err.argument!r}:\n{err}"
        )


def _interpret(case, inputs, result) -> str:
    """For a call the manifest rejects but the implementation ran: what the op's record guesses it computed."""
    record = find(case.package)
    if record is None or record.interpret is None:
        return ""
    try:
        return record.interpret(inputs, result.outputs)
    except Exception:  # interpretation is a courtesy
        return ""
