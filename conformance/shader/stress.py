"""``--stress``: a rendered shader rewritten so that its invocations reach workgroup memory and barriers at
different, data-independent times, to expose races that a device's usual schedule hides.

GPU memory-model testing provokes weak behaviours by making threads arrive at their accesses out of step; here
every statement of a function body that reads or writes a ``var<workgroup>`` variable, or calls a barrier
(``workgroupBarrier``, ``storageBarrier``, ``textureBarrier``, ``workgroupUniformLoad``), is preceded by a call
``conformance_stress_spin(<site>u)``: a loop whose trip count is a hash of the invocation's local index (shifted,
so that groups of 1 to 32 neighbouring invocations, warps included, move together), the site and the seed, at
most SPIN_MAX iterations. The loop's result feeds a workgroup atomic under a condition the compiler cannot decide,
so the delay is not optimised away; it reads and writes nothing of the kernel's.

Delays cannot reorder the lanes of one SIMD group (lavapipe and SwiftShader run 8 or 4 invocations as one
vector, in order between barriers; a warp reconverges after a divergent loop), and a race between neighbouring
invocations hides there. So, as GPU memory-model testing does ("thread randomization"), the kernel's local
invocation index is also permuted: the entry point's ``local_invocation_index`` parameter becomes
``(a * hw + b) % size`` of the hardware index (``a`` coprime with the workgroup size, per seed), which scatters
neighbouring logical invocations over different SIMD groups and warps. A kernel that synchronises through
barriers computes bit-identically under any such bijection, since every logical invocation does the same work
in the same order; only where the kernel also reads ``local_invocation_id``, ``global_invocation_id`` or a
subgroup builtin (which tie it to the hardware lanes), or its workgroup size is not one literal, are the delays
applied alone.

The rewrite is active inside :func:`stressed` (a context variable: the checker sets it around one run, the
runtime reads it when a run begins and applies :func:`apply` to each shader that run compiles). A statement
is found by scanning the function bodies for ``;``, ``{`` and ``}`` outside parentheses (comments skipped); a statement that begins with ``else``
or ``case``/``default`` cannot be preceded by a call and is left unstressed (its access is still in the run).
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from contextvars import ContextVar

from conformance.errors import ConformanceError

#: The most iterations of one delay (the trip count is hash % SPIN_MAX).
SPIN_MAX = 512
#: Per seed (cycled), how many low bits of the local index the delay ignores: groups of 2**shift invocations
#: (32: a warp of the H200) wait alike, so that whole warps as well as single invocations fall out of step.
GROUP_SHIFTS = (0, 3, 5, 1, 4, 2)
#: Seeds a stressed case runs under (``--stress`` N takes the first N of 1, 2, 3, ...).
DEFAULT_RUNS = 3
PREFIX = "conformance_stress_"
BARRIERS = ("workgroupBarrier", "storageBarrier", "textureBarrier", "workgroupUniformLoad")

_SEED: ContextVar[int | None] = ContextVar("conformance_stress_seed", default=None)
_WORKGROUP_VAR = re.compile(r"\bvar\s*<\s*workgroup\s*>\s*([A-Za-z_]\w*)")
_ENTRY = re.compile(r"@compute\b[^{;]*?\bfn\s+([A-Za-z_]\w*)\s*\(")
_INDEX_PARAM = re.compile(r"@builtin\s*\(\s*local_invocation_index\s*\)\s*([A-Za-z_]\w*)\s*:")
_UNSTRESSABLE = re.compile(r"(else|case|default)\b")
_HARDWARE_TIED = re.compile(r"\b(local_invocation_id|global_invocation_id|subgroup\w*)\b")
_WORKGROUP_SIZE = re.compile(r"@workgroup_size\s*\(\s*(\d+)u?\s*,?\s*\)")
#: Per seed (cycled), the multiplier of the permutation as a fraction of the workgroup size (then the next
#: coprime value): neighbours land about that far apart.
PERMUTATION_MIX = (0.618, 0.382, 0.5, 0.25, 0.75, 0.125)


class StressError(ConformanceError):
    """The shader cannot be rewritten for ``--stress`` (the message says why)."""


@contextmanager
def stressed(seed: int):
    """Within this block, every shader the runtime compiles is rewritten with delays of ``seed``."""
    token = _SEED.set(int(seed))
    try:
        yield
    finally:
        _SEED.reset(token)


def active_seed() -> int | None:
    return _SEED.get()


def apply(wgsl: str, seed: int | None) -> str:
    """``wgsl`` rewritten with the delays of ``seed`` (:func:`active_seed` where the run began), or unchanged."""
    return wgsl if seed is None else rewrite(wgsl, seed)


def rewrite(wgsl: str, seed: int) -> str:
    """The shader with a delay before each workgroup-memory access and barrier (unchanged where there is none)."""
    if PREFIX in wgsl:
        raise StressError(f"the shader already uses identifiers starting with {PREFIX!r}: it cannot be stressed")
    shared = _WORKGROUP_VAR.findall(wgsl)
    touches = re.compile(r"\b(" + "|".join(map(re.escape, shared + list(BARRIERS))) + r")\b")
    entry = _ENTRY.search(wgsl)
    if entry is None:
        raise StressError("no @compute entry point found in the shader")
    body, sites = _with_delays(wgsl, touches)
    if not sites:
        return wgsl
    return _with_index(body, seed)


def _with_delays(wgsl: str, touches: re.Pattern) -> tuple[str, int]:
    """Insert ``conformance_stress_spin(<site>u);`` before each statement of a function body that ``touches``."""
    pieces: list[str] = []
    last = 0  # text up to here is copied
    depth = 0  # braces
    paren = 0  # parentheses and brackets
    fn_depth = None  # the brace depth inside the current function body
    start = 0  # where the current statement (or declaration) began
    sites = 0
    i, n = 0, len(wgsl)
    while i < n:
        if wgsl.startswith("//", i):
            end = wgsl.find("\n", i)
            i = n if end < 0 else end
            continue
        if wgsl.startswith("/*", i):
            end = wgsl.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        c = wgsl[i]
        if c in "([":
            paren += 1
        elif c in ")]":
            paren -= 1
        elif paren == 0 and c in ";{}":
            text = _code(wgsl[start:i])
            stripped = text.strip()
            if (
                fn_depth is not None
                and depth >= fn_depth
                and stripped
                and touches.search(text)
                and not _UNSTRESSABLE.match(stripped)
            ):
                at = _first_code(wgsl, start)
                pieces += [wgsl[last:at], f"{PREFIX}spin({sites}u); "]
                last, sites = at, sites + 1
            if c == "{":
                if depth == 0 and re.search(r"\bfn\b", text):
                    fn_depth = 1
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    fn_depth = None
            start = i + 1
        i += 1
    pieces.append(wgsl[last:])
    return "".join(pieces), sites


def _first_code(wgsl: str, at: int) -> int:
    """The first position from ``at`` that is neither white space nor inside a comment."""
    while True:
        skipped = re.match(r"\s+|//[^\n]*|/\*.*?\*/", wgsl[at:], flags=re.S)
        if not skipped or not skipped.group(0):
            return at
        at += skipped.end()


def _code(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def _with_index(wgsl: str, seed: int) -> str:
    """The entry point records its hardware local index for the delays (a parameter added where it has none) and,
    where it can, sees a permuted one as its own ``local_invocation_index``; the helpers follow the shader."""
    entry = _ENTRY.search(wgsl)
    open_at = entry.end()
    close_at = _matching(wgsl, open_at - 1)
    params = wgsl[open_at:close_at]
    found = _INDEX_PARAM.search(params)
    hw = f"{PREFIX}hw"
    size = _WORKGROUP_SIZE.search(wgsl[entry.start() : open_at])
    permute = found is not None and size is not None and not _HARDWARE_TIED.search(_code(wgsl))
    if found is not None:
        head = wgsl[:open_at] + params[: found.start(1)] + hw + params[found.end(1) :]
        logical = f"\n  let {found.group(1)} = " + (f"{PREFIX}perm({hw});" if permute else f"{hw};")
    elif "local_invocation_index" in wgsl:
        raise StressError(
            "the entry point takes local_invocation_index inside a struct: stress needs it as a parameter"
        )
    else:
        sep = ", " if params.strip() else ""
        head, logical = wgsl[:open_at] + f"@builtin(local_invocation_index) {hw}: u32" + sep + params, ""
    body_at = wgsl.index("{", close_at) + 1
    shift = GROUP_SHIFTS[(seed - 1) % len(GROUP_SHIFTS)]
    helper = f"""
// --stress (conformance/shader/stress.py): seed {seed}, delays of 0..{SPIN_MAX - 1} iterations, groups of {2**shift}
var<private> {PREFIX}lid: u32;
var<workgroup> {PREFIX}sink: atomic<u32>;
fn {PREFIX}spin(site: u32) {{
  var h = (({PREFIX}lid >> {shift}u) * 0x9E3779B9u) ^ (site * 0x85EBCA6Bu) ^ {seed * 0x27D4EB2F % 2**32}u;
  h = (h ^ (h >> 16u)) * 0x7FEB352Du;
  h = (h ^ (h >> 15u)) * 0x846CA68Bu;
  h = h ^ (h >> 16u);
  let n = h % {SPIN_MAX}u;
  var acc = h;
  for (var i = 0u; i < n; i++) {{ acc = acc * 1664525u + 1013904223u; }}
  if (acc == 0x2545F491u) {{ atomicAdd(&{PREFIX}sink, 1u); }}
}}
"""
    if permute:
        n = int(size.group(1))
        a, b = permutation(n, seed)
        helper += f"fn {PREFIX}perm(i: u32) -> u32 {{ return (i * {a}u + {b}u) % {n}u; }}\n"
    return head + wgsl[close_at:body_at] + f"\n  {PREFIX}lid = {hw};" + logical + wgsl[body_at:] + helper


def permutation(size: int, seed: int) -> tuple[int, int]:
    """(a, b) of the bijection i -> (a i + b) % size of ``seed``: a the first value coprime with ``size`` from
    PERMUTATION_MIX's fraction of it."""
    start = max(1, round(size * PERMUTATION_MIX[(seed - 1) % len(PERMUTATION_MIX)]))
    a = next(a for a in range(start, start + size + 1) if math.gcd(a, size) == 1) % size or 1
    b = (seed * 40503) % size
    return a, (1 if (a, b) == (1, 0) and size > 1 else b)  # never the identity


def _matching(text: str, open_at: int) -> int:
    """The index of the parenthesis closing the one at ``open_at``."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise StressError("the entry point's parameter list is not closed")
