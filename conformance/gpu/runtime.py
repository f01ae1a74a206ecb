"""Run a plan on a real device: render, compile (cached), bind, dispatch, read back.

A plain run binds every buffer exactly as :func:`conformance.load_kernel` does, nothing more. A verified run
(a conformance case) dispatches the plan twice: once bound exactly like that (its outputs are the ones checked),
and once with each output bound together with a guard region after it, filled with a sentinel drawn afresh for
that run, so a kernel that writes past its output is caught (:attr:`Run.guards_intact`). The two runs' outputs
must be bit-identical (:attr:`Run.identical`): a kernel that behaves differently when it can see the guard
(``arrayLength``, the sentinel) gives itself away instead of being certified on a run production never makes.
Where every pass uses its outputs only in plain stores (:mod:`conformance.shader.kernel_view`), the kernel cannot
see how they are bound, so the guarded run alone is made: its bytes are production's (:attr:`Run.runs` says 1).

Guards against hostile or broken kernels (issue 10):

* sizes: before anything is allocated, every buffer is checked against the device's
  ``maxBufferSize`` / ``maxStorageBufferBindingSize`` and the run's host memory
  (inputs, outputs and their read-back copies) against a fraction of the memory
  available (``CONFORMANCE_HOST_MEMORY_FRACTION``, default 0.5);
* time: compiling, dispatching and reading back one run is given
  ``CONFORMANCE_DISPATCH_TIMEOUT`` seconds (default 30); past it the run fails
  with ``KernelRuntimeError(kind="timeout")`` and the device is abandoned
  (:meth:`conformance.gpu.device.DevicePool.abandon`), so the next run gets a fresh one;
* loss: an error saying the device is lost or destroyed marks it lost.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sys
import threading
from dataclasses import dataclass, field

import numpy as np
import wgpu

from conformance.config import env_float
from conformance.engine.dtypes import ITEM_BYTES
from conformance.engine.package import Package
from conformance.engine.plan import BindingPlan, PassPlan, Plan
from conformance.errors import ConformanceError, KernelRuntimeError
from conformance.gpu.backends import for_compiler
from conformance.gpu.device import Device, abandon
from conformance.shader import stress
from conformance.shader.kernel_view import comments_masked, stores_only
from conformance.shader.render import render_with_sources

#: The guard after each output: GUARD_RATIO times the output's size, at least GUARD_MIN_BYTES, at most
#: GUARD_MAX_BYTES (and within the device's buffer and binding limits). A write up to that far past the end
#: is caught: from 16 Ki f32 elements for the smallest outputs to 3 x count (an element index used as a
#: vec4 index reaches 4 x count) for outputs up to 5.3 MiB, and 16 MiB (4 Mi f32 elements) beyond.
GUARD_RATIO = 3
GUARD_MIN_BYTES = 64 << 10
GUARD_MAX_BYTES = 16 << 20
#: A verified run whose production and guarded runs together hold at most this many device bytes submits both at
#: once; a larger one runs them one after the other, so that only one run's buffers are held at a time.
OVERLAP_BYTES = 64 << 20


def guard_bytes(nbytes: int, limits: dict) -> int:
    """The guard after an output of ``nbytes`` (padded) bytes; 0 where the device leaves no room for one."""
    guard = min(max(GUARD_MIN_BYTES, GUARD_RATIO * nbytes), GUARD_MAX_BYTES)
    for cap in (limits.get("maxBufferSize"), limits.get("maxStorageBufferBindingSize")):
        if cap is not None:
            guard = min(guard, cap - nbytes)
    return max(0, guard - guard % 4)


def draw_sentinel() -> bytes:
    """A guard word for one run: random, so a kernel cannot recognise the guard by a fixed bit pattern."""
    return os.urandom(4)


def guard_pattern(nbytes: int, sentinel: bytes) -> bytes:
    return sentinel * (nbytes // 4)


DEFAULT_DISPATCH_TIMEOUT = 30.0
DEFAULT_HOST_MEMORY_FRACTION = 0.5


def _config_error(message: str) -> KernelRuntimeError:
    return KernelRuntimeError(message, kind="config")


def dispatch_timeout() -> float:
    """Seconds one run (compile, dispatch, read back) may take: ``CONFORMANCE_DISPATCH_TIMEOUT`` (``inf``: none)."""
    return env_float("CONFORMANCE_DISPATCH_TIMEOUT", DEFAULT_DISPATCH_TIMEOUT, _config_error, allow_inf=True)


def host_memory_fraction() -> float:
    """The share of available host memory one run may use: ``CONFORMANCE_HOST_MEMORY_FRACTION``."""
    return env_float("CONFORMANCE_HOST_MEMORY_FRACTION", DEFAULT_HOST_MEMORY_FRACTION, _config_error)


def available_host_memory() -> int | None:
    """Bytes of memory this process may still use (MemAvailable, capped by a cgroup v2 limit), or None."""
    available = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, AttributeError):
            return None
    try:
        limit = open("/sys/fs/cgroup/memory.max", encoding="ascii").read().strip()
        current = int(open("/sys/fs/cgroup/memory.current", encoding="ascii").read().strip())
        if limit != "max":
            available = min(available, max(0, int(limit) - current))
    except (OSError, ValueError):
        pass
    return available


def _is_lost(text: str) -> bool:
    """A device-loss message (not any message that happens to quote an identifier like ``lost``)."""
    lowered = text.lower()
    return any(
        p in lowered
        for p in (
            "device lost",
            "device is lost",
            "devicelost",
            "parent device is lost",
            "device was destroyed",
            "destroyed device",
            "device has been destroyed",
        )
    )


@dataclass
class Run:
    """What a run produced, beyond the outputs themselves."""

    outputs: dict[str, np.ndarray]
    guards_intact: dict[str, bool] = field(default_factory=dict)
    #: Per output whose guard was overwritten: where the first element written past the output's end starts, in
    #: bytes from its end (the element of the first byte that differs from the guard).
    guard_breach: dict[str, int] = field(default_factory=dict)
    inputs_intact: dict[str, bool] = field(default_factory=dict)
    #: Per output (verified runs): whether the guarded run gave the same bytes as the run bound as in production.
    identical: dict[str, bool] = field(default_factory=dict)
    dispatched: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)
    #: How many times the plan was run: 1 plain or stores-only verified (identical by construction), 2 compared.
    runs: int = 1


def first_difference(got: bytes, want: bytes) -> int:
    """The offset of the first byte where ``got`` and ``want`` differ (the shorter's length if one is a prefix)."""
    a, b = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
    n = min(a.size, b.size)
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


def _padded(nbytes: int) -> int:
    return max(4, -(-nbytes // 4) * 4)


def _output_bytes(out) -> int:
    return math.prod(out.shape) * ITEM_BYTES[out.dtype]


def _compile_error(pass_name: str, wgsl: str, message: str) -> KernelRuntimeError:
    m = re.search(r"wgsl:(\d+):(\d+)", message)
    shown = message.strip()
    if m:
        lines = wgsl.splitlines()
        line = int(m.group(1))
        if 1 <= line <= len(lines):
            shown = f"line {line}: {lines[line - 1].strip()}\n{shown}"
    return KernelRuntimeError(f"WGSL compilation failed:\n{shown}", pass_name=pass_name, kind="compile")


@dataclass
class _Pending:
    """A run recorded but not yet read back: its bindings, its read-back buffers and its command buffer."""

    bound: "Bound"
    guard: bool
    readback: dict = field(default_factory=dict)
    inputs_back: dict = field(default_factory=dict)
    commands: object = None


@dataclass
class Bound:
    """A plan's buffers and bind groups on the device, ready to dispatch any number of times."""

    plan: Plan
    buffers: dict[str, object] = field(default_factory=dict)
    output_bytes: dict[str, int] = field(default_factory=dict)
    guarded: dict[str, int] = field(default_factory=dict)  # role -> guard bytes after the output (0: none)
    sentinel: bytes = b""  # the guard word of this binding
    passes: list = field(default_factory=list)

    @staticmethod
    def record_one(cpass, pipeline, group, pass_plan: PassPlan) -> None:
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(*pass_plan.dispatch.counts)

    def record(self, cpass) -> None:
        """Every pass into one compute pass (for timing; passes of one plan run in order)."""
        for pass_plan, pipeline, group in self.passes:
            self.record_one(cpass, pipeline, group, pass_plan)

    def release(self) -> None:
        for buf in self.buffers.values():
            try:
                buf.destroy()
            except Exception:  # the device may be lost already; nothing is left to free
                pass
        self.buffers.clear()


def little_endian(inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray | None]:
    """Every input (optional ones included) in the device's byte order, little-endian: a big-endian array
    (``>f4``) is converted, by value, instead of its bytes being uploaded as they are (which read as garbage)."""
    return {
        role: a
        if a is None or a.dtype.byteorder in ("<", "|") or (a.dtype.byteorder == "=" and sys.byteorder == "little")
        else a.astype(a.dtype.newbyteorder("<"))
        for role, a in inputs.items()
    }


class Runtime:
    """Executes plans of one package on one device."""

    def __init__(self, device: Device, package: Package):
        self.device = device
        self.package = package
        self.stress_seed = stress.active_seed()  # read here: the run may compile on another thread

    # -- compilation ------------------------------------------------------------------------
    def shader_text(self, plan: Plan, pass_plan: PassPlan) -> str:
        """The WGSL a pass compiles, rendered (or found rendered) for its plan; see :meth:`pipeline`."""
        # the render context also names the op, variant and pass: templates may branch on them
        key = (
            str(self.package.root),
            self.package.manifest.sha256,
            plan.op,
            plan.variant,
            pass_plan.id,
            pass_plan.cache_key(),
        )
        rendered = self.device.pipelines.get(key)
        if rendered is None or not self.package.templates_unchanged(rendered[1]):
            rendered = self.device.pipelines[key] = render_with_sources(self.package, plan, pass_plan)
        wgsl = stress.apply(rendered[0], self.stress_seed)  # unchanged unless a --stress run is active
        return for_compiler(self.device.webgpu, wgsl)

    def pipeline(self, plan: Plan, pass_plan: PassPlan):
        """The compiled pipeline of a pass: keyed by the rendered WGSL itself (its sha256) and the binding layout.

        What a render depends on (manifest, op, variant, pass, constants) finds the last WGSL rendered for it,
        kept with the digests of the templates it was rendered from; those files are read again on every
        lookup, so an edited template (or an include of it) is rendered and compiled anew, never served stale.
        """
        wgsl = self.shader_text(plan, pass_plan)
        shader_key = (
            "wgsl",
            hashlib.sha256(wgsl.encode("utf-8")).hexdigest(),
            tuple((b.index, b.buffer_type) for b in pass_plan.bindings),
        )
        cached = self.device.pipelines.get(shader_key)
        if cached is not None:
            return cached
        dev = self.device.device
        try:
            module = dev.create_shader_module(label=pass_plan.name, code=wgsl)
        except Exception as exc:
            if _is_lost(str(exc)):
                self._classify(exc, plan)
            raise _compile_error(pass_plan.name, wgsl, str(exc)) from None
        entries = [
            {"binding": b.index, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": b.buffer_type}}
            for b in pass_plan.bindings
        ]
        try:
            layout = dev.create_bind_group_layout(entries=entries)
            pipeline = dev.create_compute_pipeline(
                label=pass_plan.name,
                layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": "main"},
            )
        except Exception as exc:
            if _is_lost(str(exc)):
                self._classify(exc, plan)
            raise KernelRuntimeError(
                f"pipeline creation failed (bindings or entry point 'main' do not match the plan): {exc}",
                pass_name=pass_plan.name,
                kind="pipeline",
            ) from None
        self.device.compilations += 1
        self.device.pipelines[shader_key] = (pipeline, layout, wgsl)
        return self.device.pipelines[shader_key]

    # -- execution --------------------------------------------------------------------------
    def bind(self, plan: Plan, inputs: dict[str, np.ndarray | None], *, guard: bool = False) -> "Bound":
        """Upload inputs, allocate outputs, and bind every non-empty pass (reusable for timing).

        Without ``guard`` every buffer is exactly what production allocates and binds. With it each output is
        followed by a guard region filled with a sentinel drawn for this binding, and bound *with* it, so a
        shader that writes past the end of an output writes into the guard (and is caught) instead of being
        silently dropped by robust buffer access.
        """
        dev = self.device.device
        usage = wgpu.BufferUsage
        bound = Bound(plan, sentinel=draw_sentinel() if guard else b"")
        inputs = little_endian(inputs)
        try:
            for role, array in inputs.items():
                if array is not None and array.size:
                    data = np.ascontiguousarray(array).tobytes()
                    data += b"\0" * (_padded(len(data)) - len(data))
                    bound.buffers[role] = dev.create_buffer_with_data(data=data, usage=usage.STORAGE | usage.COPY_SRC)
            for role, out in plan.outputs.items():
                nbytes = _padded(_output_bytes(out))
                guarded = guard_bytes(nbytes, self.device.profile.limits) if guard else 0  # 0 at the very limit
                buf = dev.create_buffer(size=nbytes + guarded, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
                if guarded:
                    dev.queue.write_buffer(buf, nbytes, guard_pattern(guarded, bound.sentinel))
                    if nbytes != _output_bytes(out):  # an odd f16 count: the padding bytes are guarded too
                        dev.queue.write_buffer(buf, nbytes - 4, bound.sentinel)
                bound.buffers[role] = buf
                bound.output_bytes[role] = nbytes
                bound.guarded[role] = guarded
            for pass_plan in plan.passes:
                if pass_plan.dispatch.empty:
                    continue
                pipeline, layout, _ = self.pipeline(plan, pass_plan)
                entries = [self._entry(b, bound.buffers, pass_plan, bound.guarded) for b in pass_plan.bindings]
                bound.passes.append((pass_plan, pipeline, dev.create_bind_group(layout=layout, entries=entries)))
        except ConformanceError:  # template and runtime errors keep their own type and message
            bound.release()
            raise
        except Exception as exc:
            bound.release()
            self._classify(exc, plan)
        return bound

    def run(self, plan: Plan, inputs: dict[str, np.ndarray | None], *, verify: bool = False) -> Run:
        """Run every pass bound as in production; with ``verify``, also a guarded run (see the module's docstring).

        Sizes are checked before anything is allocated; the work on the device is given
        :func:`dispatch_timeout` seconds.
        """
        if self.device.lost:
            raise KernelRuntimeError(
                "device-lost: the device was lost by an earlier run; open a fresh one (conformance.gpu.device.devices)",
                kind="device-lost",
                pass_name=", ".join(p.name for p in plan.passes),
            )
        inputs = little_endian(inputs)
        self.check_sizes(plan, inputs)
        outputs = {role: np.zeros(o.shape, dtype=o.dtype) for role, o in plan.outputs.items()}
        result = Run(outputs)
        if all(p.dispatch.empty for p in plan.passes):
            result.guards_intact = {r: True for r in outputs}
            result.inputs_intact = {r: True for r, a in inputs.items() if a is not None}
            result.identical = {r: True for r in outputs} if verify else {}
            return result
        guarded_only = verify and self._stores_only(plan)  # text work: before the clock starts
        limit = dispatch_timeout()
        box: dict = {}

        def work():
            try:
                self._run_on_device(plan, inputs, result, verify, guarded_only)
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=work, name=f"conformance-run-{plan.op}", daemon=True)
        worker.start()
        try:
            worker.join(None if math.isinf(limit) else limit)
        except BaseException:  # interrupted (Ctrl-C): the device cannot be trusted while the work may run on
            abandon(self.device, worker, f"interrupted run of {plan.op} (variant {plan.variant})")
            raise
        if worker.is_alive():
            passes = ", ".join(p.name for p in plan.passes)
            what = f"pass {passes} of {plan.op} (variant {plan.variant})"
            abandon(self.device, worker, what)
            raise KernelRuntimeError(
                f"timeout: the run did not finish within {limit:g} s "
                f"(CONFORMANCE_DISPATCH_TIMEOUT); the device is marked lost and the next run "
                f"gets a fresh one",
                pass_name=passes,
                kind="timeout",
            )
        error = box.get("error")
        if isinstance(error, ConformanceError):  # a template error stays a TemplateError
            raise error.with_traceback(None)
        if error is not None:
            self._classify(error, plan)
        return result

    # -- size guards ------------------------------------------------------------------------
    def check_sizes(self, plan: Plan, inputs: dict[str, np.ndarray | None]) -> None:
        """Refuse, before anything is allocated, a run whose buffers exceed the device or this machine."""
        limits = self.device.profile.limits
        passes = ", ".join(p.name for p in plan.passes)
        max_buffer = limits.get("maxBufferSize")
        max_binding = limits.get("maxStorageBufferBindingSize")
        sizes = {f"input {role}": _padded(int(a.nbytes)) for role, a in inputs.items() if a is not None and a.size}
        sizes.update({f"output {role}": _padded(_output_bytes(o)) for role, o in plan.outputs.items()})
        for what, nbytes in sizes.items():
            for name, cap in (("maxBufferSize", max_buffer), ("maxStorageBufferBindingSize", max_binding)):
                if cap is not None and nbytes > cap:
                    raise KernelRuntimeError(
                        f"device-limit: {what} needs a buffer of {nbytes:,} bytes, more than "
                        f"the device's {name} = {cap:,} bytes ({self.device.profile.name}); "
                        f"nothing was allocated",
                        pass_name=passes,
                        kind="device-limit",
                    )
        in_bytes = sum(int(a.nbytes) for a in inputs.values() if a is not None)
        out_bytes = sum(_output_bytes(o) for o in plan.outputs.values())
        needed = in_bytes + 2 * out_bytes  # the outputs and their read-back copies
        available = available_host_memory()
        if available is None:
            return
        fraction = host_memory_fraction()
        if needed > fraction * available:
            raise KernelRuntimeError(
                f"host-memory: the run needs {needed:,} bytes of host memory ({in_bytes:,} of inputs, "
                f"{out_bytes:,} of outputs, counted twice for the read-back), more than {fraction:g} of the "
                f"{available:,} bytes available (CONFORMANCE_HOST_MEMORY_FRACTION); nothing was allocated",
                pass_name=passes,
                kind="host-memory",
            )

    def _run_on_device(
        self, plan: Plan, inputs: dict[str, np.ndarray | None], result: Run, verify: bool, guarded_only: bool = False
    ) -> None:
        """The run bound as in production fills ``result.outputs``; with ``verify`` the guarded run follows, or
        replaces it where the kernel cannot tell the two apart (``guarded_only``, from :meth:`_stores_only`).

        Where both fit in :data:`OVERLAP_BYTES`, the two runs go in one submission and are read back together:
        one wait for the device instead of two (a browser resolves read-backs on a timer tick).
        """
        if verify and guarded_only:
            self._run_guarded_only(plan, inputs, result)
            return
        result.runs = 2 if verify else 1
        overlap = verify and 2 * self._bytes_in_flight(plan, inputs) <= OVERLAP_BYTES
        guarded_result = Run({})
        pending = [self._encode(plan, inputs, result, guard=False)]
        try:
            if overlap:
                pending.append(self._encode(plan, inputs, guarded_result, guard=True))
            self._submit(plan, pending)
            data = self._collect(plan, inputs, result, pending[0])
            if verify and not overlap:
                pending.append(self._encode(plan, inputs, guarded_result, guard=True))
                self._submit(plan, pending[1:])
            guarded = self._collect(plan, inputs, guarded_result, pending[1]) if verify else None
        finally:
            for run in pending:
                run.bound.release()
        for role, array in result.outputs.items():
            array.reshape(-1).view(np.uint8)[:] = np.frombuffer(data[role], np.uint8, count=array.nbytes)
        if not verify:
            return
        result.guards_intact, result.inputs_intact = guarded_result.guards_intact, guarded_result.inputs_intact
        result.guard_breach = guarded_result.guard_breach
        result.identical = {
            role: guarded[role][: array.nbytes] == data[role][: array.nbytes] for role, array in result.outputs.items()
        }

    def _stores_only(self, plan: Plan) -> bool:
        """Whether every pass, as compiled, uses each output it binds only in plain stores, by the lexical check
        and with the compiler agreeing on the comments it read past (:func:`comments_masked`)."""
        for pass_plan in plan.passes:
            if pass_plan.dispatch.empty:
                continue
            outputs = frozenset(b.index for b in pass_plan.bindings if b.arg in plan.outputs)
            if not outputs:
                continue
            wgsl = self.shader_text(plan, pass_plan)
            if not (stores_only(wgsl, outputs) and self._compiler_sees_the_comments(wgsl)):
                return False
        return True

    def _compiler_sees_the_comments(self, wgsl: str) -> bool:
        """Whether this device's compiler compiles ``wgsl`` with its comments masked: it ends and nests every
        comment where :mod:`conformance.shader.kernel_view` does. Asked once per shader text and device."""
        key = ("comments-agree", hashlib.sha256(wgsl.encode("utf-8")).hexdigest())
        known = self.device.pipelines.get(key)
        if known is None:
            masked = comments_masked(wgsl)
            known = True
            if masked is not None:
                try:
                    self.device.device.create_shader_module(label="comments masked", code=masked)
                except Exception:  # noqa: BLE001 -- any refusal means "not the comments this check read"
                    known = False
            self.device.pipelines[key] = known
        return known

    def _run_guarded_only(self, plan: Plan, inputs: dict[str, np.ndarray | None], result: Run) -> None:
        """The guarded run alone: its outputs are the ones checked, and production's bytes (module docstring)."""
        pending = self._encode(plan, inputs, result, guard=True, record=True)
        try:
            self._submit(plan, [pending])
            data = self._collect(plan, inputs, result, pending)
        finally:
            pending.bound.release()
        for role, array in result.outputs.items():
            array.reshape(-1).view(np.uint8)[:] = np.frombuffer(data[role], np.uint8, count=array.nbytes)
        result.identical = {role: True for role in result.outputs}

    @staticmethod
    def _bytes_in_flight(plan: Plan, inputs: dict[str, np.ndarray | None]) -> int:
        """Device bytes of one run: its inputs, and its outputs with their read-back copies."""
        in_bytes = sum(_padded(int(a.nbytes)) for a in inputs.values() if a is not None and a.size)
        return in_bytes + 2 * sum(_padded(_output_bytes(o)) for o in plan.outputs.values())

    def _encode(
        self, plan: Plan, inputs: dict[str, np.ndarray | None], result: Run, *, guard: bool, record: bool | None = None
    ) -> "_Pending":
        """Bind and record every pass and the copies to read back (guarded: the inputs too), not yet submitted;
        ``record`` (by default: unguarded) lists the dispatches in ``result.dispatched``."""
        record = not guard if record is None else record
        dev = self.device.device
        usage = wgpu.BufferUsage
        bound = self.bind(plan, inputs, guard=guard)
        pending = _Pending(bound, guard)
        try:
            encoder = dev.create_command_encoder()
            for pass_plan, pipeline, group in bound.passes:
                cpass = encoder.begin_compute_pass()
                bound.record_one(cpass, pipeline, group, pass_plan)
                cpass.end()
                self.device.dispatches += 1
                if record:
                    result.dispatched.append((pass_plan.name, pass_plan.dispatch.counts))
            for role in plan.outputs:
                size = bound.output_bytes[role] + bound.guarded[role]
                pending.readback[role] = bound.buffers[f"readback:{role}"] = dev.create_buffer(
                    size=size, usage=usage.MAP_READ | usage.COPY_DST
                )
                encoder.copy_buffer_to_buffer(bound.buffers[role], 0, pending.readback[role], 0, size)
            if guard:
                for role in inputs:
                    if role in bound.buffers:
                        size = bound.buffers[role].size
                        pending.inputs_back[role] = bound.buffers[f"inputback:{role}"] = dev.create_buffer(
                            size=size, usage=usage.MAP_READ | usage.COPY_DST
                        )
                        encoder.copy_buffer_to_buffer(bound.buffers[role], 0, pending.inputs_back[role], 0, size)
            pending.commands = encoder.finish()
            return pending
        except ConformanceError:
            bound.release()
            raise
        except Exception as exc:
            bound.release()
            self._classify(exc, plan)

    def _submit(self, plan: Plan, pending: list["_Pending"]) -> None:
        try:
            self.device.device.queue.submit([run.commands for run in pending])
            self.device.submissions += 1
        except Exception as exc:
            self._classify(exc, plan)

    def _collect(self, plan: Plan, inputs: dict[str, np.ndarray | None], result: Run, pending: "_Pending") -> dict:
        """The outputs' bytes by role, read back; guarded: also whether the guards and the inputs are untouched."""
        bound, guard = pending.bound, pending.guard
        try:
            outputs = {}
            for role, out in plan.outputs.items():
                data = outputs[role] = self._read(pending.readback[role])
                if guard:
                    end, padded = _output_bytes(out), bound.output_bytes[role]
                    padding = bound.sentinel[4 - (padded - end) :] if padded > end else b""
                    expected_tail = padding + guard_pattern(bound.guarded[role], bound.sentinel)
                    result.guards_intact[role] = not bound.guarded[role] or data[end:] == expected_tail
                    if not result.guards_intact[role]:  # the element the first changed byte belongs to: a
                        at = first_difference(data[end:], expected_tail)  # written byte may equal the guard's
                        result.guard_breach[role] = at - at % np.dtype(out.dtype).itemsize
            if guard:
                for role, array in inputs.items():
                    if array is not None:
                        same = role not in pending.inputs_back or (
                            self._read(pending.inputs_back[role])[: array.nbytes]
                            == np.ascontiguousarray(array).tobytes()
                        )
                        result.inputs_intact[role] = same
            return outputs
        except ConformanceError:
            raise
        except Exception as exc:
            self._classify(exc, plan)

    def _entry(self, b: BindingPlan, buffers, pass_plan: PassPlan, guarded: dict[str, int]) -> dict:
        if b.buffer_type == "uniform":
            data = b.uniform_bytes + b"\0" * (-len(b.uniform_bytes) % 16)
            buf = self.device.device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.UNIFORM)
            buffers[f"uniform:{pass_plan.id}:{b.index}"] = buf
            return {"binding": b.index, "resource": {"buffer": buf, "offset": 0, "size": len(data)}}
        buf = buffers.get(b.arg)
        if buf is None:
            raise KernelRuntimeError(
                f"binding {b.name!r} would be zero-sized (argument {b.arg!r} is empty or absent) "
                f"but the pass dispatches {pass_plan.dispatch.threads} threads",
                pass_name=pass_plan.name,
                kind="binding",
            )
        size = _padded(b.byte_size)
        guard = guarded.get(b.arg, 0)  # fits the binding limit by construction (guard_bytes)
        reaches_guard = b.byte_offset + size == buf.size - guard  # a range ending early leaves it to another
        if guard and reaches_guard and size + guard <= self.device.profile.limits["maxStorageBufferBindingSize"]:
            size += guard
        return {"binding": b.index, "resource": {"buffer": buf, "offset": b.byte_offset, "size": size}}

    def _read(self, buffer) -> bytes:
        buffer.map_sync(mode=1)  # wgpu.MapMode.READ
        try:
            return bytes(buffer.read_mapped())
        finally:
            buffer.unmap()
            buffer.destroy()

    def _classify(self, exc: BaseException, plan: Plan):
        text = str(exc)
        lowered = text.lower()
        if _is_lost(text):
            self.device.lost = True
            kind = "device-lost"
        elif "out of memory" in lowered or "outofmemory" in lowered:
            kind = "out-of-memory"
        else:
            kind = "validation" if "validation" in lowered else "runtime"
        raise KernelRuntimeError(
            f"{kind}: {text.strip()}", pass_name=", ".join(p.name for p in plan.passes), kind=kind
        ) from None
