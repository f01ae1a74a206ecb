"""WGSL memory layout and dispatch geometry: pure functions the planner uses."""

from __future__ import annotations

import re
import struct as _struct
from typing import Any, Sequence

from conformance.engine.dtypes import WGSL_BYTES

# (alignment, size, component format, component count) per host-shareable field type (WGSL §14.4.1)
FIELD_LAYOUT = {
    "u32": (4, 4, "I", 1),
    "i32": (4, 4, "i", 1),
    "f32": (4, 4, "f", 1),
    "vec2<u32>": (8, 8, "I", 2),
    "vec2<i32>": (8, 8, "i", 2),
    "vec2<f32>": (8, 8, "f", 2),
    "vec4<u32>": (16, 16, "I", 4),
    "vec4<i32>": (16, 16, "i", 4),
    "vec4<f32>": (16, 16, "f", 4),
}

_ELEMENT = re.compile(r"^(?:(?P<scalar>f16|f32|i32|u32)|vec(?P<n>[234])<(?P<inner>f16|f32|i32|u32)>)$")


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def element_type(text: str) -> tuple[str, int]:
    """``vec4<f16>`` -> (``f16``, 4); ``f32`` -> (``f32``, 1). Raises ValueError otherwise."""
    m = _ELEMENT.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a storage element type (f16, f32, i32, u32 or vecN of one)")
    if m.group("scalar"):
        return m.group("scalar"), 1
    return m.group("inner"), int(m.group("n"))


def element_stride(text: str) -> int:
    """Array stride of an element type (vec3 is padded to vec4, as WGSL lays it out)."""
    scalar, n = element_type(text)
    return WGSL_BYTES[scalar] * (4 if n == 3 else n)


def pack_struct(fields: Sequence[tuple[str, str, Any]]) -> bytes:
    """Bytes of a struct laid out by WGSL's rules: each field at its alignment, size rounded to the struct's."""
    out = bytearray()
    max_align = 1
    for name, type_, value in fields:
        align, size, fmt, count = FIELD_LAYOUT[type_]
        max_align = max(max_align, align)
        out.extend(b"\0" * (round_up(len(out), align) - len(out)))
        if count > 1 and not isinstance(value, (tuple, list)):
            raise ValueError(f"field {name!r} of type {type_} needs {count} values, got {value!r}")
        values = list(value) if count > 1 else [value]
        if len(values) != count:
            raise ValueError(f"field {name!r} of type {type_} needs {count} value(s), got {value!r}")
        try:
            out.extend(_struct.pack(f"<{count}{fmt}", *values))
        except _struct.error as exc:
            raise ValueError(f"field {name!r} of type {type_}: value {value!r} does not fit ({exc})") from None
    out.extend(b"\0" * (round_up(len(out), max_align) - len(out)))
    return bytes(out)


def split_workgroups(groups: int, max_per_dimension: int) -> tuple[int, int, int] | None:
    """Workgroup counts (x, y, z) covering ``groups`` with each at most ``max_per_dimension``.

    x is kept as large as possible; y (then z) absorbs the rest, so at most
    ``x*y*z - groups`` workgroups are idle.  None when it cannot fit.
    """
    if groups == 0:
        return (0, 0, 0)
    if max_per_dimension < 1:
        return None
    y_z = -(-groups // max_per_dimension)
    z = -(-y_z // max_per_dimension)
    if z > max_per_dimension:
        return None
    y = -(-y_z // z)
    x = -(-groups // (y * z))
    return (x, y, z)


def binding_declaration(index: int, name: str, buffer_type: str, type_text: str) -> str:
    space = {"read-only-storage": "storage, read", "storage": "storage, read_write", "uniform": "uniform"}[buffer_type]
    return f"@group(0) @binding({index}) var<{space}> {name}: {type_text};"


def struct_declaration(name: str, fields: Sequence[tuple[str, str, Any]]) -> str:
    body = "".join(f"  {f}: {t},\n" for f, t, _ in fields)
    return f"struct {name} {{\n{body}}};"
