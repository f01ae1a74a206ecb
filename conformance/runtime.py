"""Run a plan on a real device: render, compile (cached), bind, dispatch, read back.

Outputs are allocated with a guard region after them, filled with a sentinel,
so a kernel that writes past its output is caught (:attr:`Run.guards_intact`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .device import Device
from .errors import KernelRuntimeError
from .package import Package
from .plan import BindingPlan, PassPlan, Plan
from .render import render

GUARD_BYTES = 256
GUARD_WORD = 0x7FC0_DEAD  # a NaN payload no kernel computes by accident
GUARD = np.full(GUARD_BYTES // 4, GUARD_WORD, dtype=np.uint32).tobytes()
NUMPY_DTYPES = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int32": np.int32,
                "uint32": np.uint32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
                "int64": np.int64, "uint64": np.uint64, "bool": np.bool_}


@dataclass
class Run:
    """What a run produced, beyond the outputs themselves."""

    outputs: dict[str, np.ndarray]
    guards_intact: dict[str, bool] = field(default_factory=dict)
    inputs_intact: dict[str, bool] = field(default_factory=dict)
    dispatched: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)


def _padded(nbytes: int) -> int:
    return max(4, -(-nbytes // 4) * 4)


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
class Bound:
    """A plan's buffers and bind groups on the device, ready to dispatch any number of times."""

    plan: Plan
    buffers: dict[str, object] = field(default_factory=dict)
    output_bytes: dict[str, int] = field(default_factory=dict)
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
            buf.destroy()
        self.buffers.clear()


class Runtime:
    """Executes plans of one package on one device."""

    def __init__(self, device: Device, package: Package):
        self.device = device
        self.package = package

    # -- compilation ------------------------------------------------------------------------
    def pipeline(self, plan: Plan, pass_plan: PassPlan):
        key = (str(self.package.root), self.package.manifest.sha256, pass_plan.cache_key())
        cached = self.device.pipelines.get(key)
        if cached is not None:
            return cached
        wgsl = render(self.package, plan, pass_plan)
        dev = self.device.device
        try:
            module = dev.create_shader_module(label=pass_plan.name, code=wgsl)
        except Exception as exc:
            raise _compile_error(pass_plan.name, wgsl, str(exc)) from None
        import wgpu
        entries = [{"binding": b.index, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": b.buffer_type}} for b in pass_plan.bindings]
        try:
            layout = dev.create_bind_group_layout(entries=entries)
            pipeline = dev.create_compute_pipeline(
                label=pass_plan.name, layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": "main"})
        except Exception as exc:
            raise KernelRuntimeError(f"pipeline creation failed (bindings or entry point 'main' do not match the "
                                     f"plan): {exc}", pass_name=pass_plan.name, kind="pipeline") from None
        self.device.compilations += 1
        self.device.pipelines[key] = (pipeline, layout, wgsl)
        return self.device.pipelines[key]

    # -- execution --------------------------------------------------------------------------
    def bind(self, plan: Plan, inputs: dict[str, np.ndarray | None]) -> "Bound":
        """Upload inputs, allocate guarded outputs, and bind every non-empty pass (reusable for timing)."""
        import wgpu
        dev = self.device.device
        usage = wgpu.BufferUsage
        bound = Bound(plan)
        try:
            for role, array in inputs.items():
                if array is not None and array.size:
                    data = np.ascontiguousarray(array).tobytes()
                    data += b"\0" * (_padded(len(data)) - len(data))
                    bound.buffers[role] = dev.create_buffer_with_data(data=data, usage=usage.STORAGE | usage.COPY_SRC)
            for role, out in plan.outputs.items():
                nbytes = _padded(int(np.prod(out.shape, dtype=np.int64)) * np.dtype(NUMPY_DTYPES[out.dtype]).itemsize)
                buf = dev.create_buffer(size=nbytes + GUARD_BYTES,
                                        usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
                dev.queue.write_buffer(buf, nbytes, GUARD)
                bound.buffers[role] = buf
                bound.output_bytes[role] = nbytes
            for pass_plan in plan.passes:
                if pass_plan.dispatch.empty:
                    continue
                pipeline, layout, _ = self.pipeline(plan, pass_plan)
                entries = [self._entry(b, bound.buffers, pass_plan) for b in pass_plan.bindings]
                bound.passes.append((pass_plan, pipeline, dev.create_bind_group(layout=layout, entries=entries)))
        except KernelRuntimeError:
            bound.release()
            raise
        except Exception as exc:
            bound.release()
            self._classify(exc, plan)
        return bound

    def run(self, plan: Plan, inputs: dict[str, np.ndarray | None], *, verify: bool = False) -> Run:
        """Run every pass; with ``verify``, also read back inputs and output guards."""
        import wgpu
        dev = self.device.device
        outputs = {role: np.zeros(o.shape, dtype=NUMPY_DTYPES[o.dtype]) for role, o in plan.outputs.items()}
        result = Run(outputs)
        if all(p.dispatch.empty for p in plan.passes):
            result.guards_intact = {r: True for r in outputs}
            result.inputs_intact = {r: True for r, a in inputs.items() if a is not None}
            return result
        usage = wgpu.BufferUsage
        bound = self.bind(plan, inputs)
        try:
            encoder = dev.create_command_encoder()
            for pass_plan, pipeline, group in bound.passes:
                cpass = encoder.begin_compute_pass()
                bound.record_one(cpass, pipeline, group, pass_plan)
                cpass.end()
                self.device.dispatches += 1
                result.dispatched.append((pass_plan.name, pass_plan.dispatch.counts))
            readback = {}
            for role in outputs:
                size = bound.output_bytes[role] + (GUARD_BYTES if verify else 0)
                readback[role] = dev.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)
                encoder.copy_buffer_to_buffer(bound.buffers[role], 0, readback[role], 0, size)
            inputs_back = {}
            if verify:
                for role in inputs:
                    if role in bound.buffers:
                        size = bound.buffers[role].size
                        inputs_back[role] = dev.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)
                        encoder.copy_buffer_to_buffer(bound.buffers[role], 0, inputs_back[role], 0, size)
            dev.queue.submit([encoder.finish()])
            for role, array in outputs.items():
                data = self._read(readback[role])
                array.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, np.uint8, count=array.nbytes)
                if verify:
                    result.guards_intact[role] = data[bound.output_bytes[role]:] == GUARD
            if verify:
                for role, array in inputs.items():
                    if array is not None:
                        same = role not in inputs_back or (
                            self._read(inputs_back[role])[:array.nbytes] == np.ascontiguousarray(array).tobytes())
                        result.inputs_intact[role] = same
        except KernelRuntimeError:
            raise
        except Exception as exc:
            self._classify(exc, plan)
        finally:
            bound.release()
        return result

    def _entry(self, b: BindingPlan, buffers, pass_plan: PassPlan) -> dict:
        if b.buffer_type == "uniform":
            import wgpu
            data = b.uniform_bytes + b"\0" * (-len(b.uniform_bytes) % 16)
            buf = self.device.device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.UNIFORM)
            buffers[f"uniform:{pass_plan.id}:{b.index}"] = buf
            return {"binding": b.index, "resource": {"buffer": buf, "offset": 0, "size": len(data)}}
        buf = buffers.get(b.arg)
        if buf is None:
            raise KernelRuntimeError(f"binding {b.name!r} would be zero-sized (argument {b.arg!r} is empty or absent) "
                                     f"but the pass dispatches {pass_plan.dispatch.threads} threads",
                                     pass_name=pass_plan.name, kind="binding")
        return {"binding": b.index, "resource": {"buffer": buf, "offset": 0, "size": _padded(b.byte_size)}}

    def _read(self, buffer) -> bytes:
        buffer.map_sync(mode=1)  # wgpu.MapMode.READ
        try:
            return bytes(buffer.read_mapped())
        finally:
            buffer.unmap()
            buffer.destroy()

    def _classify(self, exc: Exception, plan: Plan):
        text = str(exc)
        lowered = text.lower()
        if "lost" in lowered:
            self.device.lost = True
            kind = "device-lost"
        elif "out of memory" in lowered or "outofmemory" in lowered:
            kind = "out-of-memory"
        else:
            kind = "validation" if "validation" in lowered else "runtime"
        raise KernelRuntimeError(f"{kind}: {text.strip()}", pass_name=", ".join(p.name for p in plan.passes),
                                 kind=kind) from None
