"""Whether a shader can tell a guarded binding of its outputs from the production one: a lexical check of WGSL.

A verified run (:mod:`conformance.gpu.runtime`) binds each output with a guard region after it. Inputs and
uniforms are bound identically either way, so a kernel can tell the two bindings apart only through an output
binding: its length (``arrayLength``), the sentinel past its end, or its own earlier stores, each of which needs
the binding's name somewhere other than on the left of a plain store. Where every use of every output binding is
``name[index] = value;`` at the start of a statement, the stores a run makes (which elements, which values) cannot
depend on how its outputs are bound; with the guard intact all of them landed inside the output, so the guarded run
gives production's bytes and production's run need not be made. Anything this check does not recognise (a load,
``&name``, a member or compound store, a declaration it cannot read, a binding declared twice, an index that uses
the output, a shadowing name, a character outside printable ASCII in code) answers False, and both runs are made
and compared.

The comments are found by WGSL's own grammar, in one left-to-right pass: a line-ending comment ends at any of the
spec's line breaks (not only ``\n``: a form feed or U+2028 ends it too, and what follows is code), block comments
nest. Because code hidden in what this module calls a comment would be unseen, the runtime also asks the compiler
(:func:`comments_masked`): the shader with every comment character that could spell code replaced by ``#`` must
still compile, which it does only where the compiler agrees on where every comment begins and ends.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: WGSL tokens as far as this check needs them: names, numbers, the two-character operators (so that ``==``,
#: ``+=``, ``<=`` and friends are never read as ``=``), and any other single character.
_TOKEN = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*|0[xX][0-9a-fA-F]+[iu]?|[0-9][0-9a-zA-Z_.]*|"
    r"<<=|>>=|->|&&|\|\||==|!=|<=|>=|\+=|-=|\*=|/=|%=|&=|\|=|\^=|\+\+|--|<<|>>|\S"
)
_STATEMENT_START = frozenset({";", "{", "}"})
_INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]+)[iu]?")
_NAME = re.compile(r"[A-Za-z_]\w*")

#: WGSL's line breaks (the spec's ``line_break``): a line-ending comment runs up to the first of them.
LINE_BREAKS = "\n\v\f\r\x85\u2028\u2029"
_COMMENT_START = re.compile(r"//|/\*")
_LINE_COMMENT_BODY = re.compile(f"[^{LINE_BREAKS}]*")
_BLOCK_MARK = re.compile(r"/\*|\*/")
#: Code this check reads: printable ASCII and ASCII blankspace. Anything else (a Unicode name, U+0085, U+2028,
#: the bidirectional marks WGSL counts as blankspace) is not read: the answer is False.
_READABLE_CODE = re.compile(r"[\x20-\x7e\t\n\v\f\r]*")
#: Comment characters that could spell code: printable ASCII but the comment delimiters' ``/`` and ``*``.
_MASKABLE = re.compile(r"[\x20-\x29\x2b-\x2e\x30-\x7e]")


@lru_cache(maxsize=1024)
def stores_only(wgsl: str, bindings: frozenset[int]) -> bool:
    """Whether each of the ``@group(0) @binding(N)`` variables, N in ``bindings``, is declared once and used only
    in plain stores ``name[index] = value`` (see the module's docstring). Linear in the text's length."""
    tokens = _tokens(wgsl)
    if tokens is None:
        return False
    names = _declared(tokens, bindings)
    if names is None:
        return False
    for name, declared_at in names.items():
        for i, token in enumerate(tokens):
            if token == name and i != declared_at and tokens[i - 1] != "." and not _plain_store(tokens, i):
                return False  # (after a dot the name is a member or a swizzle, never the variable)
    return True


def comment_spans(wgsl: str) -> list[tuple[int, int]] | None:
    """``(start, end)`` of every comment of ``wgsl`` by WGSL's grammar, or None for an unterminated block comment.

    One pass: each search starts where the last comment ended, so the whole text is read a bounded number of times
    however many comments it holds."""
    spans: list[tuple[int, int]] = []
    at = 0
    while (opening := _COMMENT_START.search(wgsl, at)) is not None:
        start = opening.start()
        if opening.group() == "//":
            end = _LINE_COMMENT_BODY.match(wgsl, start + 2).end()
        else:
            depth, end = 1, start + 2
            while depth:
                mark = _BLOCK_MARK.search(wgsl, end)
                if mark is None:
                    return None
                depth += 1 if mark.group() == "/*" else -1
                end = mark.end()
        spans.append((start, end))
        at = end
    return spans


def comments_masked(wgsl: str, spans: list[tuple[int, int]] | None = None) -> str | None:
    """``wgsl`` with each comment character that could spell code (printable ASCII but ``/`` and ``*``) replaced by
    ``#``, which is no WGSL token: the text compiles only where the compiler's comments cover every ``#``, that is
    where it agrees with :func:`comment_spans`. Line breaks, delimiters and other characters stay, so a compiler that
    ended or nested a comment elsewhere would see the ``#`` as code. None when the text has no comment (nothing to
    ask) or an unterminated one. ``spans``: the comments to mask, :func:`comment_spans` by default."""
    spans = comment_spans(wgsl) if spans is None else spans
    if not spans:
        return None
    pieces, at = [], 0
    for start, end in spans:
        pieces += [wgsl[at:start], _MASKABLE.sub("#", wgsl[start:end])]
        at = end
    pieces.append(wgsl[at:])
    return "".join(pieces)


def _tokens(wgsl: str) -> list[str] | None:
    """The tokens of ``wgsl`` without its comments (each comment separates tokens), or None for an unterminated
    comment or code this check does not read."""
    spans = comment_spans(wgsl)
    if spans is None:
        return None
    code, at = [], 0
    for start, end in spans:
        code += [wgsl[at:start], " "]
        at = end
    code.append(wgsl[at:])
    text = "".join(code)
    if _READABLE_CODE.fullmatch(text) is None:
        return None
    return _TOKEN.findall(text)


def _declared(tokens: list[str], bindings: frozenset[int]) -> dict[str, int] | None:
    """Name -> token index of the declaration of each variable at ``@group(0) @binding(N)``, N in ``bindings``;
    None if one is missing, declared twice, or has an attribute this check cannot read."""
    found: dict[int, list[tuple[str, int]]] = {}
    for i, token in enumerate(tokens):
        if token != "var":
            continue
        attributes = _attributes_before(tokens, i)
        if attributes is None:
            return None
        if "binding" not in attributes and "group" not in attributes:
            continue
        binding, group = attributes.get("binding"), attributes.get("group")
        if binding is None or group is None:
            return None
        name_at = _name_after_var(tokens, i)
        if name_at is None:
            return None
        if group == 0 and binding in bindings:
            found.setdefault(binding, []).append((tokens[name_at], name_at))
    if set(found) != set(bindings) or any(len(v) != 1 for v in found.values()):
        return None
    names = {v[0][0]: v[0][1] for v in found.values()}
    return names if len(names) == len(bindings) else None


def _attributes_before(tokens: list[str], var_at: int) -> dict[str, int | None] | None:
    """The attributes written just before ``var``: name -> integer argument (None when not an integer literal);
    None when ``group`` or ``binding`` has an argument that is not one."""
    attributes: dict[str, int | None] = {}
    j = var_at
    while j >= 1 and tokens[j - 1] == ")":
        depth, k = 0, j - 1
        while k >= 0:
            depth += {")": 1, "(": -1}.get(tokens[k], 0)
            if depth == 0:
                break
            k -= 1
        if k < 2 or tokens[k - 2] != "@":
            break
        argument = tokens[k + 1 : j - 1]
        attributes[tokens[k - 1]] = _integer(argument[0]) if len(argument) == 1 else None
        j = k - 2
    while j >= 2 and tokens[j - 2] == "@" and _NAME.fullmatch(tokens[j - 1]):
        attributes[tokens[j - 1]] = None  # an attribute without arguments
        j -= 2
    if any(name in attributes and attributes[name] is None for name in ("group", "binding")):
        return None
    return attributes


def _integer(token: str) -> int | None:
    """The value of an integer literal token (``1``, ``1u``, ``0x1i``), or None for anything else (``01``)."""
    literal = _INTEGER.fullmatch(token)
    try:
        return int(literal.group(1), 0) if literal else None
    except ValueError:  # a decimal with a leading zero: not a WGSL literal
        return None


def _name_after_var(tokens: list[str], var_at: int) -> int | None:
    """The token index of the name ``var<...> name`` declares."""
    j = var_at + 1
    if j < len(tokens) and tokens[j] == "<":
        depth = 0
        while j < len(tokens):
            depth += {"<": 1, ">": -1}.get(tokens[j], 0)
            j += 1
            if depth == 0:
                break
    if j < len(tokens) and _NAME.fullmatch(tokens[j]):
        return j
    return None


def _plain_store(tokens: list[str], at: int) -> bool:
    """Whether the name at ``at`` begins a statement ``name[index] = value``."""
    if at == 0 or tokens[at - 1] not in _STATEMENT_START or at + 1 >= len(tokens) or tokens[at + 1] != "[":
        return False
    depth, j = 0, at + 1
    while j < len(tokens):
        depth += {"[": 1, "]": -1}.get(tokens[j], 0)
        if depth == 0:
            break
        j += 1
    return j + 1 < len(tokens) and tokens[j + 1] == "="
