"""One case, checked end to end on a real device: plan, run, compare, verdict.

Kept apart from the pytest plugin so that the same checks serve the plugin,
the mutation runner and anyone scripting the suite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .device import Device
from .errors import (ConformanceError, ContractError, DeviceError, ExpressionError, KernelRuntimeError,
                     NoVariantError)
from .kernel import Kernel
from .package import Package

#: Rejection cases whose inputs would exceed this many bytes are checked by planning from shapes alone.
MAX_REJECTION_BYTES = 64 << 20


class CaseFailed(AssertionError):
    """The implementation broke the contract on this case; the message says how."""

    def __init__(self, message: str = "", divergence: str | None = None):
        super().__init__(message)
        self.divergence = divergence


class CaseSkipped(Exception):
    """The device cannot run this case (e.g. it lacks shader-f16); the reason says why."""


class CaseNotApplicable(Exception):
    """Nothing this case asserts applies to the implementation under test; the reason says why."""


@dataclass
class Verdict:
    """What the report needs from one case."""

    case_id: str
    package: str
    variant: str          # expected variant, or "rejected"
    dtype: str
    family: str
    status: str = "passed"  # passed | failed | skipped | xfailed | xpassed | not-run | not-applicable
    worst_ratio: float | None = None
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Outside implementations: each assertion's own outcome (contract, variant, dispatch, outputs, values)
    #: as passed | failed | not-applicable; empty for the manifest runtime (every assertion applies).
    checks: dict[str, str] = field(default_factory=dict)
    #: Where an outside implementation departs from the manifest's contract on this case:
    #: "rejects-accepted" (refuses a call the manifest accepts) or "accepts-rejected" (the reverse).
    divergence: str | None = None

    def as_dict(self) -> dict:
        out = {"id": self.case_id, "package": self.package, "variant": self.variant, "dtype": self.dtype,
               "family": self.family, "status": self.status, "worst_ratio": self.worst_ratio,
               "detail": self.detail[:2000]}
        if self.checks:
            out["checks"] = dict(self.checks)
        if self.divergence:
            out["divergence"] = self.divergence
        return out


@dataclass(frozen=True)
class Expected:
    """A case's expected outcome, read from the golden form (``cases/*.yaml``)."""

    accepted: bool
    variant: str | None = None
    dispatch: tuple = ()       # (pass name, threads, workgroup size, (x, y, z)) per pass
    outputs: dict = field(default_factory=dict)   # role -> (shape, dtype)
    reason: str | None = None
    detail: Any = None

    @classmethod
    def of(cls, expect: dict) -> "Expected":
        if expect["outcome"] == "accepted":
            return cls(True, expect["variant"],
                       tuple((p["name"], p["threads"], p["workgroupSize"], tuple(p["workgroups"]))
                             for p in expect["passes"]),
                       {role: (tuple(o["shape"]), o["dtype"]) for role, o in expect["outputs"].items()})
        return cls(False, reason=expect["reason"], detail=expect.get("detail"))


def case_dtype(case) -> str:
    present = [arg for arg in case.inputs.values() if arg is not None]
    return present[0][1] if present else "none"


def verdict_for(case) -> Verdict:
    expected = Expected.of(case.expect)
    variant = expected.variant if expected.accepted else "rejected"
    return Verdict(case.id, case.package, variant, case_dtype(case), case.family)


class CaseChecker:
    """Checks cases of the packages under test on one device."""

    def __init__(self, device: Device, make_inputs, reference_for, compare):
        self.device = device
        self._make_inputs = make_inputs
        self._reference_for = reference_for
        self._compare = compare
        self._kernels: dict[str, Kernel] = {}

    def inputs_for(self, case) -> dict:
        """The case's input arrays: stored (test.json) or regenerated from its recipe."""
        stored = getattr(case, "stored", None)
        return stored.arrays() if stored is not None else self._make_inputs(case)

    def kernel(self, package: Package) -> Kernel:
        key = str(package.root)
        if key not in self._kernels:
            self._kernels[key] = Kernel(package, self.device)
        return self._kernels[key]

    # -- the checks ---------------------------------------------------------------------------
    def check(self, case, package: Package, verdict: Verdict) -> None:
        """Raise CaseFailed / CaseSkipped, or return with ``verdict`` filled in."""
        kernel = self.kernel(package)
        if self.device.lost:
            try:
                self.device = _reopen(self.device)
            except DeviceError as err:  # e.g. a timed-out dispatch still holds the driver: this case fails, clearly
                raise CaseFailed(f"{case.id}: {err}") from None
        kernel._device = self.device  # every package's kernel follows the checker's (fresh) device
        expect = Expected.of(case.expect)
        if expect.accepted:
            self._check_accepted(case, expect, kernel, verdict)
        else:
            self._check_rejected(case, expect, kernel, verdict)

    def _check_rejected(self, case, expect: Expected, kernel: Kernel, verdict: Verdict) -> None:
        nbytes = sum(_nbytes(arg) for arg in case.inputs.values() if arg is not None)
        lacking = case.profile.exceeds(self.device.profile)
        dispatches_before = self.device.dispatches
        try:
            if nbytes > MAX_REJECTION_BYTES or lacking:
                plan = kernel.plan(case.profile, case.tunables, **dict(case.inputs))
            else:
                plan, _ = kernel.run(case.profile, case.tunables, **self.inputs_for(case))
        except KernelRuntimeError as err:  # a rejection case that ran, and failed on the device (timeout, loss)
            raise CaseFailed(f"{case.id}: expected a rejection ({expect.reason}), but the call ran and failed on "
                             f"the device: {err}") from None
        except (ContractError, ExpressionError) as err:
            self._check_reason(case, expect, err)
            if self.device.dispatches != dispatches_before:
                raise CaseFailed(f"{case.id}: the call was rejected ({getattr(err, 'reason', 'expression')}) but "
                                 f"{self.device.dispatches - dispatches_before} dispatch(es) ran") from None
            verdict.detail = str(err)
            return
        except ConformanceError as err:  # e.g. a template that does not render
            raise CaseFailed(f"{case.id}: expected a rejection ({expect.reason}), got {type(err).__name__}: "
                             f"{err}") from None
        raise CaseFailed(f"{case.id}: expected a rejection ({expect.reason}: {_detail_text(expect)}), but the "
                         f"call was accepted as variant {plan.variant!r}")

    @staticmethod
    def _check_reason(case, expect: Expected, err: ContractError | ExpressionError) -> None:
        reason = getattr(err, "reason", "expression")
        if reason != expect.reason:
            raise CaseFailed(f"{case.id}: expected rejection {expect.reason!r} ({_detail_text(expect)}), got "
                             f"{reason!r}:\n{err}") from None
        if isinstance(err, NoVariantError) and isinstance(expect.detail, dict) and expect.detail:
            if dict(err.failures) != dict(expect.detail):
                lines = [f"  {vid}: expected {expect.detail.get(vid)!r}\n  {' ' * len(vid)}  got      "
                         f"{err.failures.get(vid)!r}"
                         for vid in sorted(set(err.failures) | set(expect.detail))
                         if err.failures.get(vid) != expect.detail.get(vid)]
                raise CaseFailed(f"{case.id}: rejected for other reasons than expected:\n" + "\n".join(lines))
        elif reason != "expression" and isinstance(expect.detail, str) and expect.detail \
                and err.argument not in (None, expect.detail):
            raise CaseFailed(f"{case.id}: expected the rejection to name argument {expect.detail!r}, "
                             f"it names {err.argument!r}:\n{err}")

    def _check_accepted(self, case, expect: Expected, kernel: Kernel, verdict: Verdict) -> None:
        lacking = case.profile.exceeds(self.device.profile)
        if lacking:
            raise CaseSkipped(f"the device lacks {', '.join(lacking)}")
        inputs = self.inputs_for(case)
        try:
            plan, run = kernel.run(case.profile, case.tunables, verify=True, **inputs)
        except ContractError as err:
            raise CaseFailed(f"{case.id}: expected variant {expect.variant!r}, but the call was rejected:\n"
                             f"{err}") from None
        except (KernelRuntimeError, ConformanceError) as err:
            raise CaseFailed(f"{case.id}: {type(err).__name__}: {err}") from None
        problems = []
        if plan.variant != expect.variant:
            problems.append(f"variant: expected {expect.variant!r}, ran {plan.variant!r}")
        got_dispatch = [(p.name, p.dispatch.threads, p.dispatch.workgroup_size, p.dispatch.counts) for p in plan.passes]
        if got_dispatch != list(expect.dispatch):
            problems.append(f"dispatch: expected {list(expect.dispatch)}, planned {got_dispatch}")
        for role, (shape, dtype) in expect.outputs.items():
            y = run.outputs.get(role)
            if y is None:
                problems.append(f"output {role}: missing")
                continue
            if tuple(y.shape) != tuple(shape) or str(y.dtype) != dtype:
                problems.append(f"output {role}: expected {dtype}{list(shape)}, got {y.dtype}{list(y.shape)}")
        for role, intact in run.guards_intact.items():
            if not intact:
                problems.append(f"output {role}: the kernel wrote past the end of the output (guard overwritten)")
        for role, intact in run.inputs_intact.items():
            if not intact:
                problems.append(f"input {role}: modified by the kernel")
        if problems:
            raise CaseFailed(f"{case.id}:\n  " + "\n  ".join(problems))
        self.check_values(case, kernel.manifest, inputs, run.outputs, verdict)

    def check_values(self, case, manifest, inputs, outputs, verdict: Verdict) -> None:
        stored = getattr(case, "stored", None)
        if stored is not None:
            from reference import Tolerance
            expected = {role: np.array([np.nan if v is None else v for v in values], dtype=np.float64)
                        .reshape(case.expect["outputs"][role]["shape"]) for role, values in stored.outputs.items()}
            tolerance = {role: Tolerance(t["atol"], t["rtol"], t.get("reason") or "stored in test.json", t["dtype"])
                         for role, t in stored.tolerance.items()}
        else:
            ref = self._reference_for(manifest.domain, manifest.name)
            expected = ref.compute(inputs)
            # row ops (LayerNormalization, Softmax) derive their tolerance from each row's data
            tolerance = {role: ref.tolerance(str(y.dtype), inputs=inputs) for role, y in outputs.items()}
        worst = None
        for role, y in outputs.items():
            if y.size == 0:
                continue
            first_input = next(a for a in inputs.values() if a is not None)
            result = self._compare(y, expected[role], tolerance[role],
                                   inputs=first_input if first_input.shape == y.shape else None)
            worst = max(worst or 0.0, result.worst_ratio)
            if not result.passed:
                verdict.worst_ratio = result.worst_ratio
                raise CaseFailed(f"{case.id}: output {role} differs from the reference:\n{result.message()}")
        verdict.worst_ratio = worst


def _reopen(device: Device) -> Device:
    from .device import get_device
    return get_device(device.backend, getattr(device, "adapter_filter", None))


def _nbytes(arg) -> int:
    shape, dtype = arg
    return math.prod(shape) * np.dtype(dtype).itemsize



def _detail_text(expect) -> str:
    if isinstance(expect.detail, dict):
        return "; ".join(f"{k}: {v}" for k, v in expect.detail.items())
    return str(expect.detail or "")


# -- implementations other than the manifest runtime ---------------------------------------------------------
#: A profile without limits, with every feature: what a call must satisfy on *any* device is the op's contract;
#: what it fails only on a smaller profile (or with other tunables) is the manifest's device model.
def unbounded_profile():
    from .profile import BASELINE, DEFAULT_LIMITS, ALIGNMENT_LIMITS, KNOWN_FEATURES, DeviceProfile
    limits = {k: (v if k in ALIGNMENT_LIMITS else 1 << 40) for k, v in DEFAULT_LIMITS.items()}
    return DeviceProfile("unbounded", limits=limits, features=BASELINE.features | KNOWN_FEATURES)


class ImplChecker:
    """Checks an implementation other than the manifest runtime against the same cases.

    The contract it is held to is the manifest's on an unbounded device with the default tunables:

    * accepted there and on the case's profile: it must accept, give outputs of the expected shapes and dtypes and
      values within the reference's tolerance; the variant and dispatch are checked only when it reports them
      (and the case is on the baseline profile with default tunables), else they are *not applicable*;
    * rejected there: it must reject (any reason: implementations have their own messages);
    * rejected only under the case's device profile or tunables: *not applicable* (the implementation does not
      run under the manifest's device model).

    Refusing an accepted call or accepting a rejected one is a *divergence* from the contract.
    """

    def __init__(self, impl, make_inputs, reference_for, compare):
        self.impl = impl
        self._values = CaseChecker(None, make_inputs, reference_for, compare)
        self._prepared: dict[str, Exception | None] = {}
        self._planners: dict[str, Any] = {}
        self._unbounded = unbounded_profile()
        self._available = impl.available()

    def _prepare(self, package: Package) -> None:
        key = str(package.root)
        if key not in self._prepared:
            from .impl import NotSupported
            try:
                self.impl.prepare(package)
                self._prepared[key] = None
            except NotSupported as err:
                self._prepared[key] = err
        if self._prepared[key] is not None:
            raise CaseSkipped(str(self._prepared[key]))

    def contract(self, case, package: Package):
        """(accepted on an unbounded device with default tunables, the rejection's text or None)."""
        from .call import make_call
        from .planner import Planner
        planner = self._planners.setdefault(str(package.root), Planner(package.manifest))
        try:
            planner.plan(make_call(package.manifest, dict(case.inputs), self._unbounded, None))
            return True, None
        except NoVariantError as err:
            first = next(iter(err.failures.items()), ("?", "?"))
            return False, f"no-variant: {first[0]}: {first[1]}"
        except (ContractError, ExpressionError) as err:
            return False, f"{getattr(err, 'reason', 'expression')}: {err}"

    def check(self, case, package: Package, verdict: Verdict) -> None:
        from .impl import Rejected
        if self._available:
            raise CaseSkipped(self._available)
        self._prepare(package)
        expect = Expected.of(case.expect)
        contract_ok, contract_why = self.contract(case, package)
        checks = verdict.checks
        if expect.accepted != contract_ok:
            # accepted on the case's profile but not on an unbounded one cannot happen; the reverse is the device model
            checks.update(contract="not-applicable")
            what = f"profile {case.profile.name!r}" + (f", tunables {case.tunables}" if case.tunables else "")
            raise CaseNotApplicable(f"the manifest rejects this call only under {what} ({expect.reason}); "
                                    f"{self.impl.name} is not bound by the manifest's device model")
        nbytes = sum(_nbytes(arg) for arg in case.inputs.values() if arg is not None)
        if nbytes > MAX_REJECTION_BYTES:
            checks.update(contract="not-applicable")
            raise CaseNotApplicable(f"{nbytes} bytes of inputs: too large to run here")
        inputs = self._values.inputs_for(case)
        try:
            result = self.impl.run(case, dict(inputs))
        except Rejected as err:
            if not expect.accepted:
                checks.update(contract="passed")
                verdict.detail = f"rejected, as the manifest does ({expect.reason}): {err}"
                return
            checks.update(contract="failed")
            raise CaseFailed(f"{case.id}: {self.impl.name} rejects a call the manifest accepts (as variant "
                             f"{expect.variant!r}):\n{err}", divergence="rejects-accepted") from None
        if not expect.accepted:
            checks.update(contract="failed")
            shapes = ", ".join(f"{r} {y.dtype}{list(y.shape)}" for r, y in result.outputs.items())
            raise CaseFailed(f"{case.id}: {self.impl.name} accepts a call the manifest rejects "
                             f"({contract_why.splitlines()[0]}); it returned {shapes}" + _interpret(case, inputs, result),
                             divergence="accepts-rejected")
        checks.update(contract="passed")
        problems = []
        on_baseline = case.profile.name == "baseline" and not case.tunables
        if result.variant is None or not on_baseline:
            checks["variant"] = "not-applicable"
        elif result.variant == expect.variant:
            checks["variant"] = "passed"
        else:
            checks["variant"] = "failed"
            problems.append(f"variant: expected {expect.variant!r}, ran {result.variant!r}")
        if result.dispatch is None or not on_baseline:
            checks["dispatch"] = "not-applicable"
        elif [tuple(p) for p in result.dispatch] == [tuple(p) for p in expect.dispatch]:
            checks["dispatch"] = "passed"
        else:
            checks["dispatch"] = "failed"
            problems.append(f"dispatch: expected {list(expect.dispatch)}, planned {result.dispatch}")
        checks["outputs"] = "passed"
        for role, (shape, dtype) in expect.outputs.items():
            y = result.outputs.get(role)
            if y is None:
                problems.append(f"output {role}: missing")
            elif tuple(y.shape) != tuple(shape) or str(y.dtype) != dtype:
                problems.append(f"output {role}: expected {dtype}{list(shape)}, got {y.dtype}{list(y.shape)}")
            else:
                continue
            checks["outputs"] = "failed"
        pristine = self._values.inputs_for(case)  # regenerated once, bit-exactly, from the case's recipe
        for role, arr in inputs.items():
            if arr is not None and not np.array_equal(arr, pristine[role], equal_nan=True):
                problems.append(f"input {role}: modified by the implementation")
        if problems:
            raise CaseFailed(f"{case.id}:\n  " + "\n  ".join(problems))
        try:
            self._values.check_values(case, package.manifest, inputs, result.outputs, verdict)
        except CaseFailed:
            checks["values"] = "failed"
            raise
        checks["values"] = "passed"


def _interpret(case, inputs, result) -> str:
    """For a bias the manifest rejects: say how the implementation seems to have used it."""
    x, bias, y = inputs.get("X"), inputs.get("bias"), result.outputs.get("Y")
    if x is None or y is None or y.size == 0:
        return ""
    try:
        from reference import reference_for
        ref = reference_for(*case.package.rsplit(".", 1))
        z = x.astype(np.float64)
        if bias is not None and bias.size:
            guesses = {"numpy broadcasting of bias": lambda: z + bias.astype(np.float64),
                       "bias indexed modulo its length": lambda: z + np.resize(bias.astype(np.float64).ravel(),
                                                                              z.shape[-1] if z.ndim else 1)}
        else:
            guesses = {"bias ignored": lambda: z}
        for name, make in guesses.items():
            try:
                zz = make()
            except ValueError:
                continue
            want = ref.activation(zz)
            if want.shape == y.shape and np.allclose(y.astype(np.float64), want, rtol=2e-3, atol=2e-3, equal_nan=True):
                return f" (the values match {name})"
    except Exception:  # interpretation is a courtesy
        return ""
    return ""
