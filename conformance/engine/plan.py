"""The plan: everything the runtime needs to run a call, and nothing it has to work out again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.engine.layout import struct_declaration


@dataclass(frozen=True)
class Dispatch:
    threads: int
    workgroup_size: int
    counts: tuple[int, int, int]

    @property
    def empty(self) -> bool:
        return self.threads == 0


@dataclass(frozen=True)
class BindingPlan:
    """One binding of a pass, in plan order (``index`` is the WGSL ``@binding``)."""

    index: int
    name: str
    buffer_type: str  # read-only-storage | storage | uniform
    element_type: str | None  # WGSL element type of an array binding (``vec4<f32>``)
    length: int | None  # fixed array length, when the manifest gives one
    arg: str | None  # the tensor argument backing it
    struct_name: str | None  # the uniform struct's name
    fields: tuple[tuple[str, str, Any], ...]  # uniform fields (name, type, value)
    uniform_bytes: bytes  # packed by WGSL's layout rules (uniform bindings only)
    byte_size: int  # bytes the binding covers
    declaration: str  # the WGSL declaration the template should emit
    packing: str | None = None  # "2x16float": u32 lanes holding two f16 elements of the argument
    byte_offset: int = 0  # where in the argument's buffer the binding starts (a manifest range)

    def as_dict(self) -> dict:
        out = {"index": self.index, "name": self.name, "buffer": self.buffer_type}
        if self.arg is not None:
            out.update(arg=self.arg, elementType=self.element_type, bytes=self.byte_size)
        if self.packing is not None:
            out["packing"] = self.packing
        if self.byte_offset:
            out["byteOffset"] = self.byte_offset
        if self.length is not None:
            out["length"] = self.length
        if self.struct_name is not None:
            out.update(
                struct=self.struct_name, fields={n: v for n, _, v in self.fields}, uniformBytes=self.uniform_bytes.hex()
            )
        return out


@dataclass(frozen=True)
class PassPlan:
    id: str
    name: str
    shader: str
    constants: dict[str, Any]
    bindings: tuple[BindingPlan, ...]
    dispatch: Dispatch

    @property
    def struct_declarations(self) -> tuple[str, ...]:
        return tuple(struct_declaration(b.struct_name, b.fields) for b in self.bindings if b.struct_name)

    def cache_key(self) -> tuple:
        """What the compiled shader depends on (not the dispatch counts, not the uniform values)."""
        return (
            self.shader,
            self.name,
            tuple(sorted((k, repr(v)) for k, v in self.constants.items())),
            tuple(b.declaration for b in self.bindings),
            self.struct_declarations,
            self.dispatch.workgroup_size,
        )


@dataclass(frozen=True)
class OutputPlan:
    role: str
    shape: tuple[int, ...]
    dtype: str  # manifest name, e.g. float16


@dataclass(frozen=True)
class Plan:
    op: str
    variant: str
    passes: tuple[PassPlan, ...]
    outputs: dict[str, OutputPlan]
    profile: str

    def as_dict(self) -> dict:
        """A stable, JSON/YAML-friendly summary (golden files and behavioural diffs use it)."""
        return {
            "variant": self.variant,
            "passes": [
                {
                    "id": p.id,
                    "name": p.name,
                    "shader": p.shader,
                    "dispatch": {
                        "threads": p.dispatch.threads,
                        "workgroupSize": p.dispatch.workgroup_size,
                        "workgroups": list(p.dispatch.counts),
                    },
                    "bindings": [b.as_dict() for b in p.bindings],
                }
                for p in self.passes
            ],
            "outputs": {r: {"shape": list(o.shape), "dtype": o.dtype} for r, o in self.outputs.items()},
        }
