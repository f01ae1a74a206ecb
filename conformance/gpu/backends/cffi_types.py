"""C type strings parsed against only the typedef names they contain.

wgpu-py binds wgpu-native in cffi's ABI mode and names a C type by a string at each ``ffi.new``. cffi parses each
distinct string once per process, and each parse first declares every typedef of the header (432 for wgpu.h) as
a ``typedef int`` line: most of a short process's start-up (docs/bench/suite-speed.md). Only the names a string
contains can change how it parses, so here the declared lines are those names: the same parse tree, the same
type (tests/runtime/test_cffi_types.py: every typedef of wgpu.h, and strings of the shapes wgpu-py passes). Where
cffi's parser is not shaped as this expects, nothing is changed.
"""

from __future__ import annotations

import re

from cffi import cparser

_TYPE_STRING = "void __dummy("  # how cffi's parse_type_and_quals wraps the type string it parses
_NAME = re.compile(r"[A-Za-z_]\w*")


def install() -> bool:
    """Narrow cffi's per-type-string parse (once per process); whether it is narrowed."""
    parser = cparser.Parser
    full_parse = getattr(parser, "_parse", None)
    if full_parse is None or hasattr(full_parse, "full_parse"):
        return full_parse is not None
    if not hasattr(parser(), "_declarations"):
        return False

    def narrowed(self, csource):
        if not csource.startswith(_TYPE_STRING):
            return full_parse(self, csource)  # a cdef: every typedef is declared as before
        names = set(_NAME.findall(csource))
        declarations = self._declarations
        self._declarations = {
            key: value for key, value in declarations.items() if not key.startswith("typedef ") or key[8:] in names
        }
        try:
            return full_parse(self, csource)
        finally:
            self._declarations = declarations

    narrowed.full_parse = full_parse  # cffi's own: installed once, and the tests compare with it
    parser._parse = narrowed
    return True
