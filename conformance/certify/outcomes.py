"""What a case expects and what the report records of it: :class:`Expected`, :class:`Verdict`, the statuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Every status a case can end with, in report order.
STATUSES = ("passed", "failed", "skipped", "xfailed", "xpassed", "not-run", "not-applicable")
NOT_APPLICABLE = "not-applicable"
#: The outcome of one assertion of a case (contract, variant, dispatch, outputs, values).
CHECK_STATUSES = ("passed", "failed", NOT_APPLICABLE)


class CaseFailed(AssertionError):
    """The implementation broke the contract on this case; the message says how."""

    def __init__(self, message: str = "", divergence: str | None = None, failure=None):
        super().__init__(message)
        self.divergence = divergence
        #: For an implementation outside the device model: the failure as a standalone repro sees it
        #: (:class:`conformance.certify.repro.collect.Failure`), where the implementation itself broke the contract.
        self.failure = failure


class CaseSkipped(Exception):
    """The device cannot run this case (e.g. it lacks shader-f16); the reason says why."""


class CaseNotApplicable(Exception):
    """Nothing this case asserts applies to the implementation under test; the reason says why."""


@dataclass
class Verdict:
    """What the report needs from one case."""

    case_id: str
    package: str
    variant: str  # expected variant, or "rejected"
    dtype: str
    family: str
    status: str = "passed"  # one of STATUSES
    worst_ratio: float | None = None
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Each assertion's own outcome (contract, variant, dispatch, outputs, values): one of CHECK_STATUSES.
    checks: dict[str, str] = field(default_factory=dict)
    #: Where an implementation departs from the manifest's contract on this case:
    #: "rejects-accepted" (refuses a call the manifest accepts) or "accepts-rejected" (the reverse).
    divergence: str | None = None
    #: On a device that lacks what the case's profile assumes: how the case was planned for it, and what changed.
    replanned: str | None = None
    #: The column (WebGPU implementation, backend, adapter) of a run over several (--device=all, --webgpu=all).
    column: str | None = None
    #: A value failure's picture: {"role", "shape", "profile"} (reference.compare.Comparison.profile).
    error_profile: dict | None = None
    #: The command that reruns this case alone (failures only).
    rerun: str | None = None
    #: Where a standalone reproduction of this failure was written (implementations that write one).
    repro: str | None = None
    #: The variant the golden case expects (None: a rejection), before any planning for the device.
    expected_variant: str | None = None
    #: What the value check checked: "values", "shapes" (every output empty) or None (nothing).
    evidence: str | None = None
    #: Whether every output the case expects is empty (such a case can only give "shapes" evidence).
    empty: bool = False
    #: What an implementation reported of the call (``ImplResult.extra["report"]``: cost, provider, console).
    impl: dict = field(default_factory=dict)
    #: Output elements compared against the reference (None: no value check ran; 0 with outputs that are not
    #: empty: every element was unconstrained for the case's data, so the case checked no value).
    compared: int | None = None

    def as_dict(self) -> dict:
        out = {
            "id": self.case_id,
            "package": self.package,
            "variant": self.variant,
            "dtype": self.dtype,
            "family": self.family,
            "status": self.status,
            "worst_ratio": self.worst_ratio,
            "detail": self.detail[:2000],
        }
        if self.checks:
            out["checks"] = dict(self.checks)
        if self.divergence:
            out["divergence"] = self.divergence
        if self.replanned:
            out["replanned"] = self.replanned
        if self.column:
            out["column"] = self.column
        for key in ("error_profile", "repro") + (("rerun",) if self.status in ("failed", "xfailed") else ()):
            if getattr(self, key):
                out[key] = getattr(self, key)
        out.update(
            expected_variant=self.expected_variant, evidence=self.evidence, empty=self.empty, compared=self.compared
        )
        if self.impl:
            out["impl"] = dict(self.impl)
        return out


@dataclass(frozen=True)
class Expected:
    """A case's expected outcome, read from the golden form (``cases/*.yaml``)."""

    accepted: bool
    variant: str | None = None
    dispatch: tuple = ()  # (pass name, threads, workgroup size, (x, y, z)) per pass
    outputs: dict = field(default_factory=dict)  # role -> (shape, dtype)
    reason: str | None = None
    detail: Any = None

    @classmethod
    def of(cls, expect: dict) -> "Expected":
        if expect["outcome"] == "accepted":
            return cls(
                True,
                expect["variant"],
                tuple((p["name"], p["threads"], p["workgroupSize"], tuple(p["workgroups"])) for p in expect["passes"]),
                {role: (tuple(o["shape"]), o["dtype"]) for role, o in expect["outputs"].items()},
            )
        if expect["outcome"] == "planning-failed":  # a manifest defect: the checker fails the case
            return cls(False, reason="planning-failed", detail=f"{expect['pointer']}: {expect['message']}")
        return cls(False, reason=expect["reason"], detail=expect.get("detail"))

    def detail_text(self) -> str:
        if isinstance(self.detail, dict):
            return "; ".join(f"{k}: {v}" for k, v in self.detail.items())
        return str(self.detail or "")


def case_dtype(case) -> str:
    present = [arg for arg in case.inputs.values() if arg is not None]
    return present[0][1] if present else "none"


def verdict_for(case) -> Verdict:
    expected = Expected.of(case.expect)
    variant = (
        expected.variant
        if expected.accepted
        else "planning-failed"
        if expected.reason == "planning-failed"
        else "rejected"
    )
    empty = expected.accepted and all(0 in shape for shape, _ in expected.outputs.values())
    return Verdict(
        case.id,
        case.package,
        variant,
        case_dtype(case),
        case.family,
        expected_variant=expected.variant if expected.accepted else None,
        empty=empty,
    )
