"""The op record type: one op's reference, tolerance model, data, ORT mapping, bench inputs and message words."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

#: How a non-finite (or overflowing) input spreads to the outputs the reference leaves unconstrained.
STRUCTURES = ("elementwise", "rows")
#: Which activation of a transformer block an op sees (``bench --shapes models``); None: not benched there.
ACTIVATIONS = (None, "hidden", "intermediate", "attention")


@dataclass(frozen=True)
class DataRecipe:
    """A per-op input distribution the case generator draws for the ``values-op`` family.

    ``draw(rng, shape, dtype, scale)`` returns float64 values of ``shape`` for the roles in ``roles`` (the other
    inputs are drawn normal(0, 1)); ``scales`` are the values of ``scale`` a case is made for; ``name`` is the
    distribution's name in the golden files (unique over all records: prefix it with the op's short name).
    """

    name: str
    draw: Callable[[np.random.Generator, tuple, str, float], np.ndarray]
    scales: tuple[float, ...]
    roles: tuple[str, ...]
    why: str = ""


@dataclass(frozen=True)
class OrtMapping:
    """How ONNX Runtime runs the op: a one-node model ``op_type`` in ``domain`` (``""``: ai.onnx).

    ``inputs`` lists the package's input roles in the ONNX node's input order (an absent optional role becomes
    an empty name; trailing absent ones are dropped); ``outputs`` the output roles. ``attributes`` are fixed node
    attributes (the call's own attributes, when the case has any, are added on top). ``opset`` is the version
    imported for ``domain``.
    """

    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    domain: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    opset: int = 17


@dataclass(frozen=True)
class PlanContext:
    """The plan the manifest makes for the call being checked, as a tolerance model may need it: a reduction's
    error bound can depend on its workgroup size or loop shape. ``variant`` is the selected variant's id,
    ``tunables`` every tunable's value (the manifest's defaults with the call's overrides), ``constants`` the
    variant's constants as the template sees them."""

    variant: str
    tunables: Mapping[str, int] = field(default_factory=dict)
    constants: Mapping[str, Any] = field(default_factory=dict)


def takes_plan(function: Callable) -> bool:
    """Whether a tolerance model accepts ``plan=`` (a keyword parameter named ``plan``, or ``**kwargs``)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "plan" and p.kind != p.POSITIONAL_ONLY or p.kind == p.VAR_KEYWORD for p in params)


def _no_peer(*_args, **_kwargs):
    return None


@dataclass(frozen=True)
class OpRecord:
    """Everything the suite knows about one op ``op`` (``"<domain>.<name>"``, the manifest's op id).

    * ``roles`` / ``outputs``: the manifest's input and output roles, in order;
    * ``compute(inputs, attributes) -> {output role: float64 array}`` with NaN where the output is unconstrained;
    * ``tolerance(dtype, inputs, attributes) -> reference.Tolerance`` (an ``ElementTolerance`` for data-dependent
      models); a model with a ``plan`` keyword also gets the call's :class:`PlanContext` (variant, tunables,
      constants), see :meth:`tolerance_for`; ``tolerance_parameters(dtype, inputs, attributes) -> dict`` optionally names the model's
      parameters for ``test.json``;
    * ``structure``: ``"elementwise"`` (a non-finite input leaves its own elements unconstrained) or ``"rows"``
      (the whole row of the last axis); row ops get multi-row families and non-finite values in one row only;
    * ``data``: per-op input distributions (:class:`DataRecipe`); ``special_values(dtype)`` overrides the
      generator's special values (text, as stored in the golden files);
    * ``ort``: the ONNX Runtime mapping, or None where ORT has no such op;
    * ``torch_peer(tensors, row) -> (callable, name)`` for ``bench --peers`` (``tensors``: role -> CUDA tensor),
      or None;
    * ``bench_inputs(shape, dtype, with_optional) -> {role: (shape, dtype)}``: the bench call for a primary of
      ``shape`` (every required role, the optional ones when ``with_optional``);
    * ``activation``: the activation of a transformer block the op sees, for ``bench --shapes models``
      (``"hidden"``, ``"intermediate"`` or ``"attention"``; conformance.tools.shapes), or None;
    * ``words``: what failure messages say, e.g. ``{"unconstrained": "non-finite x+bias"}``;
    * ``interpret(inputs, outputs) -> str``: for a call the manifest rejects but an implementation ran, a guess
      at what it computed (" (the values match ...)"), or "";
    * ``output_dtype(inputs) -> str``: the outputs' dtype (default: the first present input's).
    * ``deterministic``: the same inputs give bit-identical outputs however the invocations are scheduled (a
      fixed reduction order); ``--stress`` then requires identical outputs across its seeds.
    """

    op: str
    roles: tuple[str, ...]
    outputs: tuple[str, ...]
    compute: Callable[..., dict]
    tolerance: Callable[..., Any]
    structure: str = "elementwise"
    data: tuple[DataRecipe, ...] = ()
    special_values: Callable[[str], tuple[str, ...]] | None = None
    ort: OrtMapping | None = None
    torch_peer: Callable[..., Any] | None = None
    bench_inputs: Callable[..., dict] | None = None
    words: Mapping[str, str] = field(default_factory=dict)
    interpret: Callable[..., str] | None = None
    tolerance_parameters: Callable[..., dict] | None = None
    #: ``output_dtype(inputs) -> dtype name`` of the outputs; None: the dtype of the first input present.
    output_dtype: Callable[[dict], str] | None = None
    deterministic: bool = True
    activation: str | None = None

    def __post_init__(self) -> None:
        if "." not in self.op:
            raise ValueError(f"op record {self.op!r}: the op is '<domain>.<name>', as in the manifest")
        if self.structure not in STRUCTURES:
            raise ValueError(f"op record {self.op}: structure {self.structure!r}, expected one of {STRUCTURES}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"op record {self.op}: activation {self.activation!r}, expected one of "
                f"{', '.join(map(str, ACTIVATIONS))}"
            )
        if not self.roles or not self.outputs:
            raise ValueError(f"op record {self.op}: roles and outputs must name the manifest's inputs and outputs")

    @property
    def rows(self) -> bool:
        return self.structure == "rows"

    def generator_facts(self) -> dict:
        """What the case generator reads of the record, so what the golden files depend on (their digest covers
        it): the structure and each data recipe's name, scales and roles (the draws themselves are made at run
        time from the recipe, so they are not part of it)."""
        return {
            "op": self.op,
            "structure": self.structure,
            "data": [{"name": r.name, "scales": list(r.scales), "roles": list(r.roles)} for r in self.data],
        }

    def tolerance_for(self, dtype: str, inputs, attributes=None, plan: PlanContext | None = None):
        """The tolerance of one output dtype for a call: ``tolerance(dtype, inputs, attributes, plan=plan)`` when the
        model takes ``plan`` (and one is known), else ``tolerance(dtype, inputs, attributes)`` as before."""
        if plan is not None and takes_plan(self.tolerance):
            return self.tolerance(dtype, inputs, attributes, plan=plan)
        return self.tolerance(dtype, inputs, attributes)

    def word(self, key: str) -> str:
        return self.words.get(key, DEFAULT_WORDS[key])

    def reference_dtype(self, inputs: dict) -> str | None:
        """The outputs' dtype for these inputs (checked against what a manifest declares)."""
        if self.output_dtype is not None:
            return self.output_dtype(inputs)
        first = next((inputs[r] for r in self.roles if inputs.get(r) is not None), None)
        return None if first is None else str(first.dtype)

    def recipe(self, name: str) -> DataRecipe | None:
        return next((r for r in self.data if r.name == name), None)

    def bench_call(self, manifest, shape, dtype, with_optional: bool) -> dict:
        if self.bench_inputs is not None:
            return dict(self.bench_inputs(tuple(shape), dtype, with_optional))
        return manifest_bench_inputs(manifest, tuple(shape), dtype, with_optional)


def manifest_bench_inputs(manifest, shape, dtype, with_optional: bool) -> dict:
    """Every required role (and the optional ones when asked), trailing dims of the primary ``shape`` at each
    input's declared rank: what the bench feeds when the record gives no ``bench_inputs``."""
    args = {}
    for spec in manifest.inputs:
        if spec.optional and not with_optional:
            continue
        rank = len(shape) if spec.rank is None else min(spec.rank, len(shape))
        args[spec.role] = (tuple(shape[len(shape) - rank :]) if rank else (), dtype)
    return args


DEFAULT_WORDS = {"unconstrained": "non-finite or out-of-range inputs"}
