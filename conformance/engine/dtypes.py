"""The one table of tensor dtypes: manifest (ONNX) name, WGSL name, bytes per element, ONNX element type.

NumPy's names equal the manifest's for every dtype NumPy has (``bfloat16`` it lacks); no module keeps its own copy.
"""

from __future__ import annotations

from typing import NamedTuple


class DType(NamedTuple):
    name: str  # manifest / ONNX / NumPy name: "float16"
    wgsl: str  # what expressions compare with: "f16"
    itemsize: int  # bytes per element
    onnx: int  # ONNX TensorProto element type
    numpy: bool  # NumPy has it (bfloat16 has no NumPy dtype)


DTYPES = {
    d.name: d
    for d in (
        DType("float32", "f32", 4, 1, True),
        DType("float16", "f16", 2, 10, True),
        DType("float64", "f64", 8, 11, True),
        DType("bfloat16", "bf16", 2, 16, False),
        DType("int8", "i8", 1, 3, True),
        DType("uint8", "u8", 1, 2, True),
        DType("int16", "i16", 2, 5, True),
        DType("uint16", "u16", 2, 4, True),
        DType("int32", "i32", 4, 6, True),
        DType("uint32", "u32", 4, 12, True),
        DType("int64", "i64", 8, 7, True),
        DType("uint64", "u64", 8, 13, True),
        DType("bool", "bool", 1, 9, True),
    )
}

#: Manifest dtype name -> WGSL name, and back.
WGSL_DTYPE = {d.name: d.wgsl for d in DTYPES.values()}
FROM_WGSL = {d.wgsl: d.name for d in DTYPES.values()}
#: Bytes per element, by manifest name and by WGSL name.
ITEM_BYTES = {d.name: d.itemsize for d in DTYPES.values()}
WGSL_BYTES = {d.wgsl: d.itemsize for d in DTYPES.values()}
#: The dtypes NumPy can hold (names as NumPy spells them).
NUMPY_NAMES = frozenset(d.name for d in DTYPES.values() if d.numpy)
