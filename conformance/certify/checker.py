"""One case checked end to end through an implementation: contract, variant, dispatch, outputs, guards, values.

Every implementation goes through :class:`Checker`, this project's manifest runtime included. The checker runs the
steps they share (prepare once per package, the case's inputs, the run, output shapes, dtypes and guards, the
inputs left intact, values against the op's reference, ``--stress``); what differs is the contract each is held
to, chosen once from the implementation (:func:`conformance.certify.rules.rules_for`):

* an implementation that *follows the device model* (:class:`~conformance.certify.implementations.DeviceModel`:
  this project's runtime, a JavaScript loader) is held to the case as generated for its device
  (:class:`~conformance.certify.rules.DeviceModelRules`);
* any other implementation is held to the manifest's contract on an unbounded device with the default tunables
  (:class:`~conformance.certify.rules.ContractRules`): what the manifest rejects only under the case's profile or
  tunables is *not applicable*, and refusing an accepted call or accepting a rejected one is a *divergence*.
"""

from __future__ import annotations

import math

import numpy as np

from cases.data import make_inputs
from conformance.certify.device_truth import plan_context
from conformance.certify.implementations import Hooks, NotSupported, Rejected
from conformance.certify.outcomes import CaseFailed, CaseSkipped, Expected, Verdict
from conformance.certify.repro.collect import Failure, expected_accepted, one_line
from conformance.certify.rules import rules_for
from conformance.certify.testjson import StoredCase
from conformance.engine.package import Package
from conformance.engine.planner import Planner
from conformance.engine.profile import ALIGNMENT_LIMITS, BASELINE, DEFAULT_LIMITS, KNOWN_FEATURES, DeviceProfile
from conformance.errors import ConformanceError, DeviceError, ExpressionError
from conformance.ops import record_for
from conformance.ops.registry import find
from conformance.shader.stress import stressed
from reference import ElementTolerance, Tolerance, compare


def unbounded_profile() -> DeviceProfile:
    """No limits, every feature: what a call must satisfy on *any* device is the op's contract."""
    # 2**36, not more: a manifest may cube a limit (maxComputeWorkgroupsPerDimension ** 3 * workgroupSize), and
    # the expression sandbox refuses integers beyond 128 bits (2**40 cubed, times 256, is 2**128)
    limits = {k: (v if k in ALIGNMENT_LIMITS else 1 << 36) for k, v in DEFAULT_LIMITS.items()}
    return DeviceProfile("unbounded", limits=limits, features=BASELINE.features | KNOWN_FEATURES)


class Checker:
    """Checks cases of the packages under test through one implementation."""

    def __init__(self, impl, make_inputs=make_inputs, stress_runs: int = 0, repros: bool = False):
        """``stress_runs``: run each accepted case that many times under ``--stress`` (conformance.shader.stress)
        with seeds 1, 2, ..., each checked, and all outputs identical where the op's record says it is deterministic.
        ``repros``: a failure of an implementation outside the device model carries what a standalone repro needs
        (``CaseFailed.failure``; ``--repro-dir``)."""
        self.impl = impl
        self.repros = repros
        self.stress_runs = stress_runs
        self._make_inputs = make_inputs
        self.hooks = Hooks(impl)
        self._prepared: dict[str, Exception | None] = {}
        self._planners: dict[str, Planner] = {}
        self.unbounded = unbounded_profile()
        #: What the implementation is held to: the device model or the manifest's contract (conformance.certify.rules).
        self.rules = rules_for(self)
        self._unavailable: str | None | bool = False  # False: not asked yet

    def inputs_for(self, case) -> dict:
        """The case's input arrays: stored (test.json) or regenerated, bit-exactly, from its recipe."""
        return case.stored.arrays() if isinstance(case, StoredCase) else self._make_inputs(case)

    def unavailable(self) -> str | None:
        """Why the implementation cannot run here (its ``available()``, asked once), or None."""
        if self._unavailable is False:
            self._unavailable = self.impl.available()
        return self._unavailable

    # -- the checks ---------------------------------------------------------------------------
    def check(self, case, package: Package, verdict: Verdict) -> None:
        """Raise CaseFailed / CaseSkipped / CaseNotApplicable, or return with ``verdict`` filled in."""
        if self.unavailable():
            raise CaseSkipped(self._unavailable)
        self._prepare(package)
        rules = self.rules
        try:
            case = rules.for_device(case, package, verdict)
            expect = Expected.of(case.expect)
            if case.expect["outcome"] == "planning-failed":
                raise CaseFailed(
                    f"{case.id}: planning failed: {expect.detail} (an expression of the manifest "
                    f"fails for this call; `python -m conformance lint` names each such call)"
                )
            rules.applies(case, package, expect, verdict)
            if expect.accepted:
                self._check_accepted(case, package, expect, verdict)
            else:
                rules.check_rejected(case, expect, verdict)
        except CaseFailed as err:
            console = verdict.impl.get("console")
            if not console:
                raise
            lines = "\n    ".join(console)
            raise CaseFailed(
                f"{err}\n  the page's console said, with this result:\n    {lines}",
                divergence=err.divergence,
                failure=err.failure,
            ) from None
        except DeviceError as err:  # e.g. a timed-out dispatch still holds the driver: this case fails, clearly
            raise CaseFailed(f"{case.id}: {err}") from None
        finally:
            rules.done(verdict)

    def _prepare(self, package: Package) -> None:
        key = str(package.root)
        if key not in self._prepared:
            try:
                self.impl.prepare(package)
                self._prepared[key] = None
            except NotSupported as err:
                self._prepared[key] = err
        if self._prepared[key] is not None:
            raise CaseSkipped(str(self._prepared[key]))

    def planner(self, package: Package) -> Planner:
        return self._planners.setdefault(str(package.root), Planner(package.manifest))

    def _manifest_planner(self, manifest) -> Planner:
        key = f"manifest:{manifest.file}"
        if key not in self._planners:
            self._planners[key] = Planner(manifest)
        return self._planners[key]

    def run_impl(self, case, inputs, expect: Expected, verdict: Verdict):
        """The implementation's result, or Rejected; any other suite error fails the case with its message.
        What the implementation reports of the call (``extra["report"]``, ``Rejected.report``) goes on the verdict."""
        try:
            result = self.impl.run(case, dict(inputs))
            verdict.impl.update(result.extra.get("report") or {})
            return result
        except Rejected as err:
            verdict.impl.update(err.report)
            raise
        except ExpressionError as err:  # the call never ran: an expression of the manifest failed for it
            raise CaseFailed(f"{case.id}: planning failed: {err}") from None
        except ConformanceError as err:  # e.g. a template that does not render, a timeout on the device
            what = (
                f"expected a rejection ({expect.reason}), but the call ran and failed"
                if not expect.accepted
                else "the call failed"
            )
            raise CaseFailed(f"{case.id}: {what}: {type(err).__name__}: {err}") from None

    def _check_accepted(self, case, package: Package, expect: Expected, verdict: Verdict) -> None:
        if not self.stress_runs:
            self._check_accepted_once(case, package, expect, verdict)
            return
        first = None
        for seed in range(1, self.stress_runs + 1):
            with stressed(seed):
                try:
                    outputs = self._check_accepted_once(case, package, expect, verdict)
                except CaseFailed as err:
                    raise CaseFailed(f"under --stress seed {seed}: {err}") from None
            if first is None:
                first = outputs
                continue
            record = find(case.package)
            if record is None or record.deterministic:
                differ = [role for role, y in outputs.items() if not np.array_equal(y, first[role], equal_nan=True)]
                if differ:
                    raise CaseFailed(
                        f"{case.id}: under --stress the outputs of seed {seed} differ from seed 1's "
                        f"({', '.join(differ)}): a deterministic kernel whose result depends on the "
                        f"invocations' timing (a race on workgroup memory)"
                    )

    def _check_accepted_once(self, case, package: Package, expect: Expected, verdict: Verdict) -> dict:
        checks = verdict.checks
        inputs = self.inputs_for(case)
        try:
            result = self.run_impl(case, inputs, expect, verdict)
        except Rejected as err:
            self.rules.refused(case, package, expect, inputs, err, verdict)
            raise  # refused() raises what the refusal is (the rules decide)
        self.rules.ran(checks)
        problems = self._plan_problems(case, expect, result, checks) + self._output_problems(
            case, expect, inputs, result, checks
        )
        if problems:
            shown = all(p.startswith("output ") for p in problems)  # what a repro can show
            raise CaseFailed(
                f"{case.id}:\n  " + "\n  ".join(problems),
                failure=self.failure_for(
                    "values",
                    "; ".join(problems),
                    case,
                    inputs,
                    lambda: self.contract_outcome(case, package.manifest, inputs, expect),
                    {"outcome": "accepted", "outputs": dict(result.outputs)},
                )
                if shown
                else None,
            )
        try:
            self.check_values(case, package.manifest, inputs, result.outputs, verdict)
        except CaseFailed:
            checks["values"] = "failed"
            raise
        checks["values"] = "passed"
        return result.outputs

    def _plan_problems(self, case, expect: Expected, result, checks: dict) -> list[str]:
        """Variant and dispatch: always for the device model, else where reported on the baseline profile."""
        applies = self.rules.plan_checked(case)
        problems = []
        for name, got, want, same in (
            ("variant", result.variant, expect.variant, lambda g, w: g == w),
            (
                "dispatch",
                result.dispatch,
                list(expect.dispatch),
                lambda g, w: [tuple(p) for p in g] == [tuple(p) for p in w],
            ),
        ):
            if got is None or not applies:
                checks[name] = "not-applicable"
            elif same(got, want):
                checks[name] = "passed"
            else:
                checks[name] = "failed"
                verb = "ran" if name == "variant" else "planned"
                problems.append(f"{name}: expected {want!r}, {verb} {got!r}")
        return problems

    def _output_problems(self, case, expect: Expected, inputs, result, checks: dict) -> list[str]:
        problems = []
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
        for role, intact in (result.guards_intact or {}).items():
            if not intact:
                problems.append(
                    f"output {role}: the kernel wrote past the end of the output"
                    f"{_breach(result, role, expect.outputs.get(role))}"
                )
        for role, same in (result.identical or {}).items():
            if not same:
                problems.append(
                    f"output {role}: the run bound with a guard region gave other bytes than the run "
                    f"bound as in production (load_kernel): the kernel behaves differently under test"
                )
        if result.inputs_intact is not None:
            changed = [role for role, intact in result.inputs_intact.items() if not intact]
        else:
            pristine = self.inputs_for(case)  # regenerated once more, bit-exactly, from the case's recipe
            changed = [
                role
                for role, arr in inputs.items()
                if arr is not None and not np.array_equal(arr, pristine[role], equal_nan=True)
            ]
        problems += [f"input {role}: modified by the {self.rules.actor}" for role in changed]
        return problems

    def check_values(self, case, manifest, inputs, outputs, verdict: Verdict) -> None:
        """Outputs against the op's reference: shapes and dtypes always (where the op has a record), values where
        there are any. ``verdict.evidence`` says what was checked: "values", "shapes" (every output empty) or
        None (nothing: no record and no values, or every element unconstrained); ``verdict.compared`` how many
        output elements were compared."""
        record = find(manifest.op_id)
        words = record.word("unconstrained") if record else "non-finite inputs"
        reference = record.compute(inputs, case.attributes) if record is not None else None
        if reference is not None:
            self._check_contract_outputs(case, record, inputs, reference, outputs)
        if all(y.size == 0 for y in outputs.values()):
            verdict.worst_ratio, verdict.compared = None, 0
            verdict.evidence = "shapes" if reference is not None else None
            return
        expected, tolerance = self._expected(
            case, manifest, inputs, reference, {role: str(y.dtype) for role, y in outputs.items()}
        )
        worst, compared, unconstrained = None, 0, 0
        for role, y in outputs.items():
            if y.size == 0:
                continue
            first_input = next(a for a in inputs.values() if a is not None)
            result = compare(
                y,
                expected[role],
                tolerance[role],
                inputs=first_input if first_input.shape == y.shape else None,
                unconstrained_as=words,
            )
            worst = max(worst or 0.0, result.worst_ratio)
            compared, unconstrained = compared + result.checked, unconstrained + result.unconstrained
            if not result.passed:
                verdict.worst_ratio = result.worst_ratio
                verdict.error_profile = result.error_profile(role, y.shape)
                raise CaseFailed(
                    f"{case.id}: output {role} differs from the reference:\n{result.message()}",
                    failure=self.failure_for(
                        "values",
                        f"output {role} differs from the reference: {result.message()}",
                        case,
                        inputs,
                        lambda: expected_accepted(expected, tolerance, Expected.of(case.expect).outputs),
                        {"outcome": "accepted", "outputs": dict(outputs)},
                    ),
                )
        verdict.worst_ratio = worst
        verdict.compared = compared
        if compared:
            verdict.evidence = "values"
            return
        # every element unconstrained for this data: the values check passed whatever the kernel wrote
        verdict.evidence = None
        verdict.detail = f"compared no element: all {unconstrained} output element(s) unconstrained ({words})"

    def _expected(self, case, manifest, inputs, reference: dict | None, dtypes: dict) -> tuple[dict, dict]:
        """(role -> float64 expected values, role -> tolerance) for outputs of ``dtypes`` (role -> dtype name):
        the stored case's (test.json), else the op record's reference and tolerance model."""
        if isinstance(case, StoredCase):
            stored = case.stored
            expected = {
                role: np.array([np.nan if v is None else v for v in values], dtype=np.float64).reshape(
                    case.expect["outputs"][role]["shape"]
                )
                for role, values in stored.outputs.items()
            }
            tolerance = {role: stored_tolerance(t, expected[role].shape) for role, t in stored.tolerance.items()}
            return expected, tolerance
        record = find(manifest.op_id)
        if reference is None or record is None:
            record_for(manifest.op_id)  # a missing record is a clear error that says how to add one
        # the tolerance model may depend on the call's data (row ops derive it from each row)
        plan = plan_context(self._manifest_planner(manifest), case)  # a model may depend on the plan
        return reference, {
            role: record.tolerance_for(dtype, inputs, case.attributes, plan) for role, dtype in dtypes.items()
        }

    def failure_for(self, kind: str, text: str, case, inputs, expected, observed: dict) -> Failure | None:
        """The failure as a standalone repro sees it (``expected()`` made only then), where repros are wanted (and
        the rules give failures a repro: an implementation outside the device model)."""
        if not self.rules.repros or not self.repros:
            return None
        return Failure(
            kind, one_line(text), case.id, case.package, dict(inputs), dict(case.attributes), expected(), observed
        )

    def contract_outcome(self, case, manifest, inputs, expect: Expected) -> dict:
        """What the contract expects of an accepted call, for a repro: the float64 reference of every output with
        its tolerance (an empty output: its shape and dtype), or, without a reference, the shapes and why."""
        try:
            record = find(manifest.op_id)
            reference = record.compute(inputs, case.attributes) if record is not None else None
            dtypes = {role: dtype for role, (shape, dtype) in expect.outputs.items() if 0 not in shape}
            expected, tolerance = self._expected(case, manifest, inputs, reference, dtypes)
        except Exception as err:  # noqa: BLE001 -- a repro without values says why, the case still fails as it did
            out = expected_accepted({}, {}, expect.outputs)
            return {**out, "tolerance": f"no reference values: {type(err).__name__}: {err}"}
        return expected_accepted(expected, tolerance, expect.outputs)

    @staticmethod
    def _check_contract_outputs(case, record, inputs, reference: dict, outputs: dict) -> None:
        """The outputs the manifest declares (and the implementation returned) against the op's reference:
        a manifest cannot make its own contract trivial (an output declared empty, of another dtype)."""
        problems = []
        dtype = record.reference_dtype(inputs)
        for role in record.outputs:
            want = reference.get(role)
            got = outputs.get(role)
            if want is None or got is None:
                continue
            if tuple(got.shape) != tuple(np.shape(want)):
                problems.append(
                    f"output {role}: the manifest declares shape {list(got.shape)}, the op's reference "
                    f"({record.op}) gives {list(np.shape(want))}"
                )
            if dtype is not None and str(got.dtype) != dtype:
                problems.append(
                    f"output {role}: the manifest declares dtype {got.dtype}, the op's reference "
                    f"({record.op}) gives {dtype}"
                )
        if problems:
            raise CaseFailed(f"{case.id}: the outputs do not match the op's contract:\n  " + "\n  ".join(problems))


def _breach(result, role: str, expected) -> str:
    """Where the first write past the end landed, as an element index of the output and its distance past the end
    (where the implementation reports it), else that the guard was overwritten."""
    offset = (result.extra or {}).get("guard_breach", {}).get(role)
    if offset is None or expected is None:
        return " (guard overwritten)"
    shape, dtype = expected
    size, count = np.dtype(dtype).itemsize, math.prod(shape)
    past = offset // size
    return (
        f": first at element {count + past} (flat index; the output has {count} elements, so {past + 1} past "
        f"its last one; byte {offset} after its end)"
    )


def stored_tolerance(t: dict, shape) -> Tolerance:
    """A tolerance of test.json: atol + rtol |expected|, or per-element absolute parts (``elementAtol``)."""
    reason = t.get("reason") or "stored in test.json"
    if t.get("elementAtol") is not None:
        element = np.array(t["elementAtol"], dtype=np.float64).reshape(shape)
        return ElementTolerance(t["atol"], t["rtol"], reason, t["dtype"], element_atol=element)
    return Tolerance(t["atol"], t["rtol"], reason, t["dtype"])
