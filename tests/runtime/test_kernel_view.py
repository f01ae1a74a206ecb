"""A kernel that uses its outputs only in plain stores is run once, guarded; any other is run twice and compared
(conformance.shader.kernel_view). The lexical check answers False for everything it does not recognise."""

from __future__ import annotations

import numpy as np
import pytest

from conformance import BASELINE, load_kernel
from conformance.shader.kernel_view import comment_spans, comments_masked, stores_only

HEAD = (
    "struct Params { count: u32, }\n"
    "@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@group(0) @binding(2) var<uniform> params: Params;\n"
)


def body(*lines: str) -> str:
    return HEAD + (
        "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
        "  let i = gid.x;\n  if (i >= params.count) { return; }\n" + "".join(f"  {s}\n" for s in lines) + "}\n"
    )


@pytest.mark.parametrize(
    "lines",
    [
        ("y[i] = x[i];",),
        ("y[i] = x[i]; // y[i] += 1.0; arrayLength(&y)",),
        ("/* y[0] = y[1]; /* nested */ */ y[i] = 2.0 * x[i];",),
        ("let v = vec4<f32>(x[i]); y [ i ] = v.y;",),  # a swizzle named like the output
        ("if (x[i] > 0.0) { y[i] = x[i]; } else { y[i] = 0.0; }",),
        ("for (var k = 0u; k < 2u; k++) { y[i * 2u + k] = x[k]; }",),
    ],
)
def test_plain_stores_only(lines):
    assert stores_only(body(*lines), frozenset({1}))


@pytest.mark.parametrize(
    "lines",
    [
        ("y[i] = x[i];", "y[i] = y[i] * 2.0;"),  # a load of an earlier store
        ("y[i] += x[i];",),  # compound
        ("y[i]++;",),
        ("if (arrayLength(&y) > params.count) { return; }", "y[i] = x[i];"),
        ("let p = &y; (*p)[i] = x[i];",),
        ("y[u32(y[0])] = x[i];",),  # the index reads the output
        ("_ = y[0]; y[i] = x[i];",),
        ("let y = 1.0;",),  # a shadowing name: not told apart
        ("y[i] = x[i]; /* unterminated",),
    ],
)
def test_anything_else_is_not(lines):
    assert not stores_only(body(*lines), frozenset({1}))


@pytest.mark.parametrize(
    "wgsl",
    [
        HEAD.replace("@binding(1) var", "@binding(1 + 0) var") + "fn main() { y[0] = 1.0; }",  # not a literal
        HEAD + "@group(0) @binding(1) var<storage, read_write> z: array<f32>;\nfn main() { y[0] = 1.0; z[0] = 1.0; }",
        HEAD.replace("@binding(1)", "@binding(5)") + "fn main() { y[0] = 1.0; }",  # not declared
        HEAD.replace("@binding(1) var", "@binding(01) var") + "fn main() { y[0] = 1.0; }",  # no WGSL literal
    ],
)
def test_declarations_it_cannot_read_are_not(wgsl):
    assert not stores_only(wgsl, frozenset({1}))


def test_attributes_in_any_order_and_with_suffixes():
    wgsl = HEAD.replace("@group(0) @binding(1)", "@binding(1u) @group(0i)") + "fn main() { y[0] = 1.0; }"
    assert stores_only(wgsl, frozenset({1}))


def test_a_stores_only_kernel_runs_once_and_still_has_its_guard_checked(device):
    kernel = load_kernel("com.microsoft.Gelu", device=device)
    x = np.linspace(-3, 3, 4097, dtype=np.float32)
    before = (device.submissions, device.dispatches)
    plan, run = kernel.run(BASELINE, verify=True, X=x)
    assert (device.submissions - before[0], device.dispatches - before[1]) == (1, 1) and run.runs == 1
    assert run.guards_intact == {"Y": True} and run.inputs_intact == {"X": True} and run.identical == {"Y": True}
    assert run.dispatched == [(p.name, p.dispatch.counts) for p in plan.passes]
    np.testing.assert_array_equal(run.outputs["Y"], kernel(X=x)["Y"])


#: WGSL's line breaks other than ``\n``: each ends a line-ending comment, and what follows it is code.
OTHER_LINE_BREAKS = ["\v", "\f", "\r", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("line_break", OTHER_LINE_BREAKS, ids=[f"U+{ord(c):04X}" for c in OTHER_LINE_BREAKS])
def test_a_line_comment_ends_at_every_wgsl_line_break(line_break):
    hidden = body(f"// note{line_break} if (arrayLength(&y) < params.count + 16u) {{ return; }}", "y[i] = x[i];")
    assert not stores_only(hidden, frozenset({1}))
    assert stores_only(body(f"// note{line_break} y[i] = x[i];"), frozenset({1})) is (line_break in "\v\f\r")


@pytest.mark.parametrize("code", ["let yé = 1.0; y[i] = x[i];", "y[i] = x[i];\u200e", "y\u2028[i] = x[i];"])
def test_code_outside_printable_ascii_is_not_read(code):
    assert not stores_only(body(code), frozenset({1}))


def test_block_comments_nest_and_line_comments_ignore_block_marks():
    assert comment_spans("a /* b /* c */ d */ e // f /* g\nh") == [(2, 19), (22, 31)]
    assert comment_spans("a /* b /* c */ d") is None


def test_the_masked_text_keeps_what_ends_or_nests_a_comment():
    wgsl = "x; // a b\fc;\n/* d /* e */ f */ g;"
    assert comments_masked(wgsl) == "x; //####\fc;\n/*###/*###*/###*/ g;"
    assert comments_masked("no comment here;") is None


def test_the_compiler_refuses_a_masking_that_misplaces_a_comment_end(device):
    """The cross-check the runtime makes: masked by a reader that ends ``//`` only at ``\\n`` (a comment end
    misplaced), the code after the form feed becomes ``#`` and the compiler refuses it; masked by WGSL's rules it
    compiles."""
    wgsl = body("// note\f if (arrayLength(&y) < params.count + 16u) { return; }", "y[i] = x[i];")
    start = wgsl.index("//")
    newline_only = [(start, wgsl.index("\n", start))]
    with pytest.raises(Exception):  # noqa: B017 (wgpu-py raises its own validation error types; any refusal is the point)
        device.device.create_shader_module(code=comments_masked(wgsl, newline_only))
    device.device.create_shader_module(code=comments_masked(wgsl))


def test_finding_the_comments_reads_the_text_a_bounded_number_of_times(monkeypatch):
    """Linear: the characters the searches scan add up to a small multiple of the text, however many comments it
    holds (each search from the end of the last comment; the former reader searched for ``/*`` from every code
    segment to the end of the text)."""
    import conformance.shader.kernel_view as view

    scanned = [0]

    class Counting:
        def __init__(self, pattern):
            self.pattern = pattern

        def search(self, text, pos=0):
            found = self.pattern.search(text, pos)
            scanned[0] += (found.end() if found else len(text)) - pos
            return found

        def match(self, text, pos=0):
            found = self.pattern.match(text, pos)
            scanned[0] += (found.end() if found else 0) - pos
            return found

    for name in ("_COMMENT_START", "_LINE_COMMENT_BODY", "_BLOCK_MARK"):
        monkeypatch.setattr(view, name, Counting(getattr(view, name)))
    for lines in (1_000, 20_000):
        text = body(*["// a comment line, as a template might emit thousands"] * lines, "y[i] = x[i];")
        scanned[0] = 0
        assert view.comment_spans(text) is not None
        assert scanned[0] <= 2 * len(text), (lines, scanned[0], len(text))
