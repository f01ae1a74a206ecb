"""A call: what the caller passes (shapes, dtypes, present inputs), on which profile, with which tunables.

:func:`make_call` normalises the caller's arguments and checks the parts of the
contract that need no expression: argument names, shapes, dtypes within the type
constraints, one dtype per type variable, required inputs present.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from conformance.engine.dtypes import FROM_WGSL, NUMPY_NAMES, WGSL_DTYPE
from conformance.engine.manifest import Manifest, attribute_value
from conformance.engine.profile import DeviceProfile
from conformance.errors import ContractError

#: Largest element count a call may name: keeps sizes exact in float64 and far beyond any device.
MAX_NUMEL = 2**53
MAX_RANK = 8


@dataclass(frozen=True)
class TensorArg:
    """One tensor argument as the contract sees it: a shape and a manifest dtype name (``float32``)."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def wgsl(self) -> str:
        return WGSL_DTYPE.get(self.dtype, self.dtype)


@dataclass(frozen=True)
class Call:
    """Everything a plan depends on."""

    inputs: Mapping[str, TensorArg | None]
    profile: DeviceProfile
    tunables: Mapping[str, int] = field(default_factory=dict)
    attributes: Mapping[str, Any] = field(default_factory=dict)  # every attribute, defaults filled in

    def present(self, role: str) -> bool:
        return self.inputs.get(role) is not None


def dtype_name(value: Any, argument: str) -> str:
    """A manifest dtype name from a string (``float16``, ``f16``) or a NumPy dtype."""
    if isinstance(value, str):
        if value in WGSL_DTYPE:
            return value
        if value in FROM_WGSL:
            return FROM_WGSL[value]
        raise ContractError(
            f"argument {argument!r}: unknown dtype {value!r}; expected one of {', '.join(WGSL_DTYPE)}",
            reason="dtype",
            argument=argument,
        )
    try:
        name = np.dtype(value).name
    except TypeError:
        raise ContractError(
            f"argument {argument!r}: cannot read a dtype from {value!r}", reason="dtype", argument=argument
        ) from None
    if name not in NUMPY_NAMES:
        raise ContractError(
            f"argument {argument!r}: dtype {name} is not a tensor dtype this suite knows",
            reason="dtype",
            argument=argument,
        )
    return name


def tensor_arg(value: Any, argument: str) -> TensorArg | None:
    """Normalise ``None``, a NumPy array, or a ``(shape, dtype)`` pair."""
    if value is None:
        return None
    if isinstance(value, TensorArg):
        return value
    if isinstance(value, np.ndarray):
        return TensorArg(tuple(int(d) for d in value.shape), dtype_name(value.dtype, argument))
    if isinstance(value, (tuple, list)) and len(value) == 2:
        shape, dtype = value
        return TensorArg(_shape(shape, argument), dtype_name(dtype, argument))
    raise ContractError(
        f"argument {argument!r}: expected a NumPy array, a (shape, dtype) pair or None, got {type(value).__name__}",
        reason="argument",
        argument=argument,
    )


def _shape(shape: Any, argument: str) -> tuple[int, ...]:
    if not isinstance(shape, (tuple, list)):
        raise ContractError(
            f"argument {argument!r}: shape must be a sequence of integers, got {shape!r}",
            reason="shape",
            argument=argument,
        )
    if len(shape) > MAX_RANK:
        raise ContractError(
            f"argument {argument!r}: rank {len(shape)} exceeds the suite's maximum {MAX_RANK}",
            reason="shape",
            argument=argument,
        )
    dims = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ContractError(
                f"argument {argument!r}: shape {list(shape)!r} must hold non-negative integers",
                reason="shape",
                argument=argument,
            )
        dims.append(int(d))
    numel = math.prod(dims)
    if numel > MAX_NUMEL:
        raise ContractError(
            f"argument {argument!r}: shape {dims} has {numel} elements, more than {MAX_NUMEL}",
            reason="shape",
            argument=argument,
        )
    return tuple(dims)


def split_attributes(manifest: Manifest, args: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A call's keyword arguments as (tensor arguments, attribute values), by the manifest's attribute names."""
    tensors = {k: v for k, v in args.items() if k not in manifest.attributes}
    return tensors, {k: v for k, v in args.items() if k in manifest.attributes}


def resolve_attributes(manifest: Manifest, given: Mapping[str, Any]) -> dict[str, Any]:
    """Every attribute of the manifest: the value given (checked against its type) or the default."""
    out = {}
    for name, spec in manifest.attributes.items():
        if name not in given:
            if spec.required:
                raise ContractError(
                    f"attribute {name!r} is required by {manifest.op_id} (it has no default)",
                    reason="missing-attribute",
                    argument=name,
                )
            out[name] = spec.default
            continue
        try:
            out[name] = attribute_value(spec.type, given[name])
        except ValueError as exc:
            raise ContractError(f"attribute {name!r}: {exc}", reason="attribute", argument=name) from None
    return out


def make_call(
    manifest: Manifest, args: Mapping[str, Any], profile: DeviceProfile, tunables: Mapping[str, int] | None = None
) -> Call:
    """``args``: tensor arguments by role and attribute values by name (``X=..., epsilon=1e-6``)."""
    args, given = split_attributes(manifest, args)
    input_roles = [s.role for s in manifest.inputs]
    for name in args:
        if name not in input_roles:
            also = f"; attributes are {', '.join(manifest.attributes)}" if manifest.attributes else ""
            raise ContractError(
                f"{manifest.op_id} has no input {name!r}; inputs are {', '.join(input_roles)}{also}",
                reason="unknown-argument",
                argument=name,
            )
    inputs = {role: tensor_arg(args.get(role), role) for role in input_roles}
    merged = dict(manifest.tunables)
    for key, value in (tunables or {}).items():
        if key not in manifest.tunables:
            raise ContractError(
                f"{manifest.op_id} has no tunable {key!r}; tunables are {', '.join(manifest.tunables) or 'none'}",
                reason="tunable",
                argument=key,
            )
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
            raise ContractError(
                f"tunable {key!r} must be an integer in [0, 2**32), got {value!r}", reason="tunable", argument=key
            )
        merged[key] = value
    return Call(inputs, profile, merged, resolve_attributes(manifest, given))


def check_types(manifest: Manifest, call: Call) -> dict[str, str]:
    """Presence and type-constraint checks; returns each type variable's WGSL dtype."""
    bound: dict[str, tuple[str, str]] = {}
    for spec in manifest.inputs:
        arg = call.inputs.get(spec.role)
        if arg is None:
            if not spec.optional:
                raise ContractError(
                    f"input {spec.role!r} is required by {manifest.op_id} but absent",
                    reason="missing-input",
                    argument=spec.role,
                )
            continue
        allowed = manifest.type_constraints[spec.typevar]
        if arg.dtype not in allowed:
            raise ContractError(
                f"input {spec.role!r} has dtype {arg.dtype}; type {spec.typevar} allows {', '.join(allowed)}",
                reason="dtype",
                argument=spec.role,
            )
        if spec.typevar in bound and bound[spec.typevar][1] != arg.dtype:
            other, other_dtype = bound[spec.typevar]
            raise ContractError(
                f"input {spec.role!r} has dtype {arg.dtype} but {other!r} has {other_dtype}; "
                f"both are of type {spec.typevar}",
                reason="mixed-dtype",
                argument=spec.role,
            )
        bound.setdefault(spec.typevar, (spec.role, arg.dtype))
    return {tv: WGSL_DTYPE[dt] for tv, (_, dt) in bound.items()}


def rank_violation(manifest: Manifest, call: Call) -> tuple[str, str] | None:
    """The first input whose rank differs from the declared one, as (role, message)."""
    for spec in manifest.inputs:
        arg = call.inputs.get(spec.role)
        if arg is not None and spec.rank is not None and len(arg.shape) != spec.rank:
            return spec.role, (
                f"input {spec.role!r} has rank {len(arg.shape)} (shape {list(arg.shape)}); "
                f"the contract declares rank {spec.rank}"
            )
    return None
