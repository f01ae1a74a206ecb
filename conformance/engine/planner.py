"""Turn a manifest and a call into a :class:`~conformance.engine.plan.Plan`, or a ContractError saying why not."""

from __future__ import annotations

import functools
import math
import weakref
from typing import Any, Callable, Iterable, Mapping

from jinja2 import nodes

from conformance.engine.call import FROM_WGSL, Call, check_types, make_call, rank_violation
from conformance.engine.expressions import Absent, Evaluator, Namespace, RuleTable, Scope, builtins, format_value
from conformance.engine.layout import binding_declaration, element_stride, element_type, pack_struct, split_workgroups
from conformance.engine.manifest import BindingSpec, Manifest, PassSpec, VariantSpec
from conformance.engine.plan import BindingPlan, Dispatch, OutputPlan, PassPlan, Plan
from conformance.engine.profile import DeviceProfile
from conformance.errors import ContractError, ExpressionError, NoVariantError


def scope_for(
    manifest: Manifest, call: Call, typevars: dict[str, str], output_shapes: dict[str, tuple[int, ...]] | None = None
) -> Scope:
    """The names an expression sees for this call (see specs/README.md, "Expressions"), read-only with a memo."""
    shapes: dict[str, Any] = {}
    for spec in manifest.inputs:
        arg = call.inputs.get(spec.role)
        shapes[spec.role] = arg.shape if arg is not None else Absent(spec.role)
    for role, shape in (output_shapes or {}).items():
        shapes[role] = shape
    ranks = {role: (len(s) if isinstance(s, tuple) else s) for role, s in shapes.items()}
    present = {role: isinstance(s, tuple) for role, s in shapes.items()}
    dtypes = {tv: typevars.get(tv, Absent(f"dtype {tv}")) for tv in manifest.type_constraints}
    device = Namespace(
        "device",
        {"limits": Namespace("device.limits", call.profile.limits), "features": tuple(sorted(call.profile.features))},
    )
    return Scope(
        {
            "shapes": Namespace("shapes", shapes),
            "ranks": Namespace("ranks", ranks),
            "dtypes": Namespace("dtypes", dtypes),
            "present": Namespace("present", present),
            "device": device,
            "tunables": Namespace("tunables", call.tunables),
            "attributes": Namespace("attributes", call.attributes),
            **builtins(call.profile.features),
        }
    )


def _int(value: Any, what: str, pointer: str, manifest: Manifest, minimum: int = 0) -> int:
    """An integer slot; ``/`` is true division in Jinja, so an integral float (``numel / 4``) is accepted."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ExpressionError(
            f"{what} must be an integer >= {minimum}, got {format_value(value)}", pointer=pointer, file=manifest.file
        )
    if value < minimum:  # a well-formed value this call makes out of range (e.g. a tunable of 0)
        raise ContractError(
            f"{what} is {value} for this call, below {minimum} ({manifest.file}:{pointer})", reason="dispatch"
        )
    return value


#: Outcomes kept per manifest (then the oldest goes): a plan is a few kilobytes.
MAX_PLANS = 4096

#: Per manifest, shared by every Planner of it (the runner's kernel, the checker's tolerance context, the case
#: generator's families): call key -> Plan, or the ContractError / ExpressionError the call raised.
_PLANS: "weakref.WeakKeyDictionary[Manifest, dict]" = weakref.WeakKeyDictionary()

#: Scopes kept per manifest (the newest): the case generator asks for a call's scope and then plans it, so both
#: evaluate in one scope, whose memo keeps every subtree's value. A scope with its memo is tens of kilobytes.
MAX_SCOPES = 256

#: Per manifest, like _PLANS: call key -> (typevars, outputs, scope), or the error the contract checks raised.
_SCOPES: "weakref.WeakKeyDictionary[Manifest, dict]" = weakref.WeakKeyDictionary()


def call_key(call: Call) -> tuple:
    """Everything a plan depends on besides the manifest: each input's shape and dtype, the profile's name, limits
    and features, the tunables, and the attributes by type and value (``1`` is not ``1.0``, nor ``-0.0`` ``0.0``).

    Mappings are taken in their own order, unsorted: equal mappings in another order only make another key (a
    plan made again), never one key for two calls, and make_call and DeviceProfile write them in one order."""
    profile = call.profile
    return (
        tuple((role, None) if arg is None else (role, arg.shape, arg.dtype) for role, arg in call.inputs.items()),
        profile.name,
        tuple(profile.limits.items()),
        frozenset(profile.features),
        tuple(call.tunables.items()),
        tuple((name, type(v).__name__, repr(v)) for name, v in call.attributes.items()),
    )


@functools.lru_cache(maxsize=1024)
def _name_node(name: str) -> nodes.Name:
    """One tree per constant name, so the evaluator's cache by tree finds it (a fresh node each plan did not)."""
    return nodes.Name(name, "load")


def _fresh(exc: Exception) -> Exception:
    """A copy of a remembered refusal to raise again (its own traceback; the fields callers read)."""
    copy = type(exc).__new__(type(exc), *exc.args)
    copy.__dict__.update({k: dict(v) if isinstance(v, dict) else v for k, v in exc.__dict__.items()})
    return copy


def _remembered(memory: dict, limit: int, key: tuple, make: Callable[[], Any]) -> Any:
    """``memory[key]``, made by ``make()`` when absent (the oldest entry goes past ``limit``); a refusal it raised
    (ContractError, ExpressionError) is remembered too, as a copy without the traceback (whose frames would keep
    every local of the planning alive), and raised again as a fresh copy."""
    known = memory.get(key)
    if known is None:
        try:
            known = make()
        except (ContractError, ExpressionError) as exc:
            known = _fresh(exc)
        if len(memory) >= limit:
            del memory[next(iter(memory))]
        memory[key] = known
    if isinstance(known, Exception):
        raise _fresh(known)
    return known


class Planner:
    """Plans calls for one manifest; a call planned before (by any planner of the manifest) gets the same outcome
    without planning again: a plan depends on the manifest and :func:`call_key` only."""

    def __init__(self, manifest: Manifest):
        self.manifest = manifest
        self._outputs_eval = Evaluator(RuleTable({}, file=manifest.file), manifest.compilations)
        self._plans = _PLANS.setdefault(manifest, {})
        self._scopes = _SCOPES.setdefault(manifest, {})

    def plan(self, call: Call) -> Plan:
        return _remembered(self._plans, MAX_PLANS, call_key(call), lambda: self._plan(call))

    def plan_case(
        self,
        args: Mapping[str, Any],
        profile: DeviceProfile,
        tunables: Mapping[str, int] | Iterable[tuple[str, int]] | None = None,
    ) -> Plan:
        """The plan of a case: the call ``args`` (tensors by role as ``(shape, dtype)``, an array or None, and
        attributes by name: a case's ``call_args()``) on ``profile`` with ``tunables`` (overrides of the manifest's
        defaults, a mapping or name-value pairs; None or empty: the defaults). The one way the suite plans a case,
        a generated call or a caller's; raises the refusal (ContractError, ExpressionError) as :meth:`plan` does."""
        return self.plan(self.call_for(args, profile, tunables))

    def call_for(
        self,
        args: Mapping[str, Any],
        profile: DeviceProfile,
        tunables: Mapping[str, int] | Iterable[tuple[str, int]] | None = None,
    ) -> Call:
        """The :class:`Call` :meth:`plan_case` plans (:func:`make_call` with this planner's manifest), for what
        needs the call itself: its :meth:`scope`, its tunables with the defaults filled in."""
        return make_call(self.manifest, args, profile, dict(tunables or ()))

    def _plan(self, call: Call) -> Plan:
        m = self.manifest
        typevars, outputs, scope = self._prepared(call)
        variant, failures = self._select(scope)
        violation = rank_violation(m, call)
        if variant is None:
            lines = "\n".join(f"  {vid}: {why}" for vid, why in failures.items())
            note = f"\n  (contract: {violation[1]})" if violation else ""
            err = NoVariantError(f"no variant of {m.op_id} accepts this call:\n{lines}{note}", failures=failures)
            err.argument = violation[0] if violation else None
            raise err
        if violation:
            raise ContractError(violation[1], reason="rank", argument=violation[0])
        constants = {
            name: variant.evaluator.evaluate(_name_node(name), scope, f"{variant.pointer}/constants/{name}")
            for name in variant.constant_names
        }
        passes = tuple(self._pass(variant, p, scope, constants, call, typevars) for p in variant.passes)
        return Plan(m.op_id, variant.id, passes, outputs, call.profile.name)

    # -- steps --------------------------------------------------------------------------------
    def scope(self, call: Call) -> Scope:
        """The names every variant's expressions see for ``call`` (contract checks and output shapes first)."""
        return self._prepared(call)[2]

    def _prepared(self, call: Call) -> tuple[dict[str, str], dict[str, OutputPlan], Scope]:
        """(type variables, outputs, scope) of ``call``, after the contract checks and output shapes."""

        def prepare():
            typevars = check_types(self.manifest, call)
            outputs = self._outputs(call, typevars)
            return typevars, outputs, scope_for(self.manifest, call, typevars, {r: o.shape for r, o in outputs.items()})

        return _remembered(self._scopes, MAX_SCOPES, call_key(call), prepare)

    def _outputs(self, call: Call, typevars: dict[str, str]) -> dict[str, OutputPlan]:
        m = self.manifest
        scope = scope_for(m, call, typevars)
        out = {}
        for spec in m.outputs:
            shape = self._outputs_eval.evaluate(spec.shape.tree, scope, spec.shape.pointer)
            if not isinstance(shape, tuple) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
            ):
                raise ExpressionError(
                    f"output shape must be a list of non-negative integers, got {format_value(shape)}",
                    pointer=spec.shape.pointer,
                    file=m.file,
                )
            if spec.rank is not None:
                rank = self._outputs_eval.evaluate(spec.rank.tree, scope, spec.rank.pointer)
                if rank != len(shape):
                    raise ContractError(
                        f"output {spec.role!r}: shape {list(shape)} has rank {len(shape)}, the "
                        f"contract says rank {format_value(rank)}",
                        reason="output-rank",
                        argument=spec.role,
                    )
            dtype = typevars.get(spec.typevar)
            if dtype is None:
                raise ContractError(
                    f"output {spec.role!r}: type {spec.typevar} is bound by no present input",
                    reason="dtype",
                    argument=spec.role,
                )
            out[spec.role] = OutputPlan(spec.role, shape, FROM_WGSL[dtype])
        return out

    def _select(self, scope) -> tuple[VariantSpec | None, dict[str, str]]:
        failures: dict[str, str] = {}
        for variant in self.manifest.variants:
            for expr in variant.when:
                value = variant.evaluator.evaluate(expr.tree, scope, expr.pointer)
                if not isinstance(value, bool):
                    raise ExpressionError(
                        f"a when predicate must be true or false, got {format_value(value)}",
                        pointer=expr.pointer,
                        file=self.manifest.file,
                    )
                if not value:
                    failures[variant.id] = variant.evaluator.explain_false(expr.tree, scope)
                    break
            else:
                return variant, failures
        return None, failures

    def _pass(self, variant: VariantSpec, spec: PassSpec, scope, constants, call: Call, typevars) -> PassPlan:
        ev, m, limits = variant.evaluator, self.manifest, call.profile.limits
        wg = _int(
            ev.evaluate(spec.workgroup_size.tree, scope, spec.workgroup_size.pointer),
            "workgroupSize",
            spec.workgroup_size.pointer,
            m,
            minimum=1,
        )
        threads = _int(ev.evaluate(spec.threads.tree, scope, spec.threads.pointer), "threads", spec.threads.pointer, m)
        for limit in ("maxComputeWorkgroupSizeX", "maxComputeInvocationsPerWorkgroup"):
            if wg > limits[limit]:
                raise ContractError(
                    f"pass {spec.name}: workgroup size {wg} exceeds device.limits.{limit} = {limits[limit]}",
                    reason="device-limit",
                )
        groups = -(-threads // wg)
        counts = split_workgroups(groups, limits["maxComputeWorkgroupsPerDimension"])
        if counts is None:
            raise ContractError(
                f"pass {spec.name}: {groups} workgroups do not fit in 3 dimensions of at most "
                f"device.limits.maxComputeWorkgroupsPerDimension = "
                f"{limits['maxComputeWorkgroupsPerDimension']}",
                reason="device-limit",
            )
        bindings = tuple(self._binding(i, b, spec, scope, constants, call, ev) for i, b in enumerate(spec.bindings))
        self._check_binding_limits(spec, bindings, limits)
        return PassPlan(spec.id, spec.name, spec.shader, constants, bindings, Dispatch(threads, wg, counts))

    def _binding(self, index: int, b: BindingSpec, spec: PassSpec, scope, constants, call: Call, ev) -> BindingPlan:
        m = self.manifest

        def resolve(ref):
            return constants[ref[1:]] if isinstance(ref, str) and ref.startswith("$") else ref

        if b.buffer_type == "uniform":
            fields = tuple((f.name, f.type, self._field_value(f, scope, ev)) for f in b.fields)
            try:
                data = pack_struct(fields)
            except (ValueError, KeyError) as exc:
                raise ExpressionError(str(exc), pointer=b.pointer, file=m.file) from None
            decl = binding_declaration(index, b.name, b.buffer_type, b.struct_name)
            return BindingPlan(
                index, b.name, b.buffer_type, None, None, None, b.struct_name, fields, data, len(data), decl
            )
        etype, length = resolve(b.element_type), resolve(b.length)
        try:
            scalar, width = element_type(str(etype))
        except ValueError as exc:
            raise ExpressionError(f"binding {b.name!r}: {exc}", pointer=b.pointer, file=m.file) from None
        if b.packing == "2x16float":
            if scalar != "u32" or width == 3:
                raise ExpressionError(
                    f"binding {b.name!r}: packing 2x16float needs u32, vec2<u32> or vec4<u32>, not {etype}",
                    pointer=b.pointer,
                    file=m.file,
                )
            scalar, width = "f16", 2 * width
        tensor = self._tensor_for(b.arg, call, scope)
        if tensor is None:
            raise ContractError(
                f"pass {spec.name}: binding {b.name!r} needs argument {b.arg!r}, which is absent",
                reason="missing-input",
                argument=b.arg,
            )
        shape, wgsl_dtype = tensor
        numel = math.prod(shape)
        if scalar != wgsl_dtype:
            packed = " (packing 2x16float holds f16)" if b.packing else ""
            raise ExpressionError(
                f"binding {b.name!r}: element type {etype}{packed} does not hold argument "
                f"{b.arg!r} of dtype {wgsl_dtype}",
                pointer=b.pointer,
                file=m.file,
            )
        first, count = self._range(b, resolve, numel, width, etype, element_stride(scalar), call)
        if length is not None:
            length = _int(length, f"binding {b.name!r} length", b.pointer, m, minimum=1)
            if length * width != count:
                raise ContractError(
                    f"pass {spec.name}: binding {b.name!r} declares {length} x {etype} but "
                    f"argument {b.arg!r} has {count} elements",
                    reason="binding-length",
                    argument=b.arg,
                )
        type_text = f"array<{etype}, {length}>" if length is not None else f"array<{etype}>"
        byte_size = (count // width) * element_stride(str(etype))
        decl = binding_declaration(index, b.name, b.buffer_type, type_text)
        return BindingPlan(
            index,
            b.name,
            b.buffer_type,
            str(etype),
            length,
            b.arg,
            None,
            (),
            b"",
            byte_size,
            decl,
            b.packing,
            first * element_stride(scalar),
        )

    def _range(
        self, b: BindingSpec, resolve, numel: int, width: int, etype, scalar_bytes: int, call: Call
    ) -> tuple[int, int]:
        """The argument elements [first, first + count) a binding covers: the whole argument unless it names a
        range, whose start must sit at a multiple of the device's minStorageBufferOffsetAlignment."""
        m = self.manifest
        first = 0 if b.first is None else _int(resolve(b.first), f"binding {b.name!r} first", b.pointer, m)
        count = numel - first if b.count is None else _int(resolve(b.count), f"binding {b.name!r} count", b.pointer, m)
        packed = f" ({width} f16 each, packing 2x16float)" if b.packing else ""
        if first + count > numel:
            raise ContractError(
                f"binding {b.name!r} covers elements [{first}, {first + count}) of argument "
                f"{b.arg!r}, which has {numel}",
                reason="binding-range",
                argument=b.arg,
            )
        if count % width:
            what = f"{count} elements" if (first, count) == (0, numel) else f"the {count} elements it covers"
            raise ExpressionError(
                f"binding {b.name!r}: {what} of {b.arg!r} are not a whole number of {etype}{packed}",
                pointer=b.pointer,
                file=m.file,
            )
        limits = call.profile.limits
        if (first, count) != (0, numel) and numel * scalar_bytes > limits["maxBufferSize"]:
            raise ContractError(
                f"argument {b.arg!r} needs a buffer of {numel * scalar_bytes} bytes, more than "
                f"device.limits.maxBufferSize = {limits['maxBufferSize']}",
                reason="device-limit",
                argument=b.arg,
            )
        alignment = limits["minStorageBufferOffsetAlignment"]
        if first * scalar_bytes % alignment:
            raise ContractError(
                f"binding {b.name!r} starts at byte {first * scalar_bytes} of argument {b.arg!r}, "
                f"not a multiple of device.limits.minStorageBufferOffsetAlignment = {alignment}",
                reason="binding-offset",
                argument=b.arg,
            )
        return first, count

    def _field_value(self, f, scope, ev):
        value = ev.evaluate(f.value.tree, scope, f.value.pointer)
        if f.type.endswith(("u32", "i32", "u32>", "i32>")) and not isinstance(value, (tuple, list)):
            return _int(
                value, f"field {f.name!r}", f.value.pointer, self.manifest, minimum=0 if "u32" in f.type else -(2**31)
            )
        return value

    def _tensor_for(self, arg: str, call: Call, scope) -> tuple[tuple[int, ...], str] | None:
        shapes = scope["shapes"]
        shape = shapes[arg]
        if not isinstance(shape, tuple):
            return None
        spec = next((s for s in (*self.manifest.inputs, *self.manifest.outputs) if s.role == arg))
        return shape, scope["dtypes"][spec.typevar]

    @staticmethod
    def _check_binding_limits(spec: PassSpec, bindings: tuple[BindingPlan, ...], limits):
        storage = [b for b in bindings if b.buffer_type != "uniform"]
        if len(storage) > limits["maxStorageBuffersPerShaderStage"]:
            raise ContractError(
                f"pass {spec.name}: {len(storage)} storage buffers exceed "
                f"device.limits.maxStorageBuffersPerShaderStage = "
                f"{limits['maxStorageBuffersPerShaderStage']}",
                reason="device-limit",
            )
        for b in bindings:
            caps = (
                ("maxUniformBufferBindingSize",)
                if b.buffer_type == "uniform"
                else ("maxStorageBufferBindingSize", "maxBufferSize")
            )
            for cap in caps:
                if b.byte_size > limits[cap]:
                    raise ContractError(
                        f"pass {spec.name}: binding {b.name!r} needs {b.byte_size} bytes, more "
                        f"than device.limits.{cap} = {limits[cap]}",
                        reason="device-limit",
                        argument=b.arg,
                    )
