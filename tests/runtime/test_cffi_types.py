"""cffi parses wgpu-py's type strings against only the typedef names they contain (conformance.gpu.backends.
cffi_types): every type comes out as the full parse makes it."""

from __future__ import annotations

import pytest

import conformance.gpu.backends.wgpu_native  # noqa: F401 -- installs the narrowed parse
from conformance.gpu.backends.cffi_types import install

ffi = pytest.importorskip("wgpu.backends.wgpu_native._ffi").ffi

# strings of the shapes wgpu-py passes to ffi.new and ffi.cast: pointers to structs, arrays, enums, callbacks
STRINGS = [
    "WGPUBufferDescriptor *",
    "WGPUBindGroupEntry[]",
    "WGPUFeatureName *",
    "uint32_t[]",
    "char *",
    "WGPUChainedStruct *",
    "WGPUBufferMapCallback",
    "WGPUPassTimestampWrites *",
    "struct WGPUShaderSourceWGSL *",
    "void(*)(WGPUMapAsyncStatus, WGPUStringView, void *, void *)",
    "WGPULimits *",
    "WGPUTextureFormat[4]",
]


def test_the_narrowed_parse_is_installed():
    from cffi import cparser

    assert install() and cparser.Parser._parse.full_parse  # cffi as pinned has the shape it expects


@pytest.mark.parametrize("cdecl", STRINGS)
def test_a_type_string_parses_as_with_every_typedef_declared(cdecl):
    parser = ffi._parser
    narrowed = parser.parse_type(cdecl)
    full = type(parser)._parse.full_parse  # cffi's own _parse, every typedef declared
    ast = full(parser, "void __dummy(\n%s\n);" % cdecl)[0]
    assert narrowed == parser._get_type_and_quals(ast.ext[-1].type.args.params[0].type)[0]


def test_every_typedef_of_the_header_is_the_type_it_was_declared_as():
    parser = ffi._parser
    typedefs = {key[8:]: value[0] for key, value in parser._declarations.items() if key.startswith("typedef ")}
    assert len(typedefs) > 400
    for name, declared in typedefs.items():
        assert parser.parse_type(name) == declared, name
