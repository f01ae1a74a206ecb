"""One case, checked end to end on a real device: plan, run, compare, verdict.

Kept apart from the pytest plugin so that the same checks serve the plugin,
the mutation runner and anyone scripting the suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .device import Device
from .errors import ConformanceError, ContractError, ExpressionError, KernelRuntimeError, NoVariantError
from .kernel import Kernel
from .package import Package

#: Rejection cases whose inputs would exceed this many bytes are checked by planning from shapes alone.
MAX_REJECTION_BYTES = 64 << 20


class CaseFailed(AssertionError):
    """The implementation broke the contract on this case; the message says how."""


class CaseSkipped(Exception):
    """The device cannot run this case (e.g. it lacks shader-f16); the reason says why."""


@dataclass
class Verdict:
    """What the report needs from one case."""

    case_id: str
    package: str
    variant: str          # expected variant, or "rejected"
    dtype: str
    family: str
    status: str = "passed"  # passed | failed | skipped | xfailed | xpassed | not-run
    worst_ratio: float | None = None
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"id": self.case_id, "package": self.package, "variant": self.variant, "dtype": self.dtype,
                "family": self.family, "status": self.status, "worst_ratio": self.worst_ratio,
                "detail": self.detail[:2000]}


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
            self.device = kernel._device = _reopen(self.device)
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
                plan = kernel.plan(case.profile, case.tunables, **_shape_args(case))
            else:
                plan, _ = kernel.run(case.profile, case.tunables, **self._make_inputs(case))
        except (ContractError, ExpressionError) as err:
            self._check_reason(case, expect, err)
            if self.device.dispatches != dispatches_before:
                raise CaseFailed(f"{case.id}: the call was rejected ({err.reason}) but "
                                 f"{self.device.dispatches - dispatches_before} dispatch(es) ran") from None
            verdict.detail = str(err)
            return
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
        inputs = self._make_inputs(case)
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
        self._check_values(case, kernel, inputs, run.outputs, verdict)

    def _check_values(self, case, kernel: Kernel, inputs, outputs, verdict: Verdict) -> None:
        manifest = kernel.manifest
        ref = self._reference_for(manifest.domain, manifest.name)
        expected = ref.compute(inputs)
        worst = None
        for role, y in outputs.items():
            if y.size == 0:
                continue
            first_input = next(a for a in inputs.values() if a is not None)
            result = self._compare(y, expected[role], ref.tolerance(str(y.dtype)),
                                   inputs=first_input if first_input.shape == y.shape else None)
            worst = max(worst or 0.0, result.worst_ratio)
            if not result.passed:
                verdict.worst_ratio = result.worst_ratio
                raise CaseFailed(f"{case.id}: output {role} differs from the reference:\n{result.message()}")
        verdict.worst_ratio = worst


def _reopen(device: Device) -> Device:
    from .device import get_device
    return get_device(device.backend)


def _nbytes(arg) -> int:
    shape, dtype = arg
    n = 1
    for d in shape:
        n *= d
    return n * np.dtype(dtype).itemsize


def _shape_args(case) -> dict:
    return {role: arg for role, arg in case.inputs.items()}


def _detail_text(expect) -> str:
    if isinstance(expect.detail, dict):
        return "; ".join(f"{k}: {v}" for k, v in expect.detail.items())
    return str(expect.detail or "")
