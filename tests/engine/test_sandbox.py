"""Hostile expressions: refused (ManifestError at load, or ExpressionError at plan) by a budget counted in nodes,
integer bits or characters (never in seconds, so the verdict is the same on every machine), with a pointer.

Each payload is planted in a copy of the FastGelu seed, either as the first `when` predicate of
the highest-priority variant (so it is the first thing a plan evaluates) or as a derive rule
that predicate uses, and the test loads the manifest and plans an ordinary call.
"""

from __future__ import annotations

import pytest

from conformance import BASELINE, ConformanceError, ExpressionError, ManifestError
from tests.engine.conftest import kernel_from

WHEN = "/variants/0/when/0"

PAYLOADS = [
    # Python internals through attributes
    "''.__class__",
    "''.__class__.__mro__[1].__subclasses__()",
    "cycler.__init__.__globals__",  # Jinja's default globals are not in scope
    "joiner.__init__.__globals__",
    "lipsum.__globals__",
    "namespace.__init__",
    "self.__init__.__globals__",
    "shapes.__class__.__mro__",
    "shapes._values",  # the namespace's private storage
    "shapes.X.__class__.__base__",
    "shapes.X.count(1) > 0",  # methods of the shape tuple
    'dtypes.T.upper() == "F32"',  # methods of strings
    "dtypes.T.__class__.__base__.__subclasses__()",
    '"{0.__class__}".format(shapes)',
    "numel.__globals__",
    "numel._fn.__globals__",
    "numel.__call__(shapes.X) > 0",
    "min(1, 2, key=numel) > 0",  # keyword arguments
    "range(10 ** 9)",
    "dict(a=1)",
    "x.__class__",
    # unbounded cost
    "9 ** 9 ** 9 > 0",
    "10 ** 100000 > 0",
    "2 ** 100000 > 0",
    "numel(shapes.X) ** 1000000 > 0",
    '"a" * 1000000000 == ""',
    '"ab" * 10 ** 9 == ""',
    "[1] * 10 ** 9 == []",
    "shapes.X * 1000000000 == shapes.X",  # tuple repetition
    '"%s" % shapes == ""',
    "1e308 * 10 > 0",  # overflow to inf
    "(" * 500 + "1" + ")" * 500 + " > 0",
    "-" * 1500 + "1 > 0",
    "not " * 450 + "true",
    "[" * 400 + "]" * 400,
    "x" * 3000,  # longer than any expression may be
]


def _refused(raw, *, pointers, expect_load_error=False):
    """Load + plan; the call must fail with a ManifestError/ExpressionError."""
    with pytest.raises((ManifestError, ExpressionError)) as info:
        k = kernel_from(raw)
        assert not expect_load_error, "loaded"
        k.plan(profile=BASELINE, X=((8,), "float32"))
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, ConformanceError)
    assert err.pointer in pointers, str(err)[:300]
    assert "x.json" in str(err)
    assert "must be true or false" not in str(err)  # refused, not evaluated to a non-boolean
    return err


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_payload_in_when(fastgelu_raw, payload):
    fastgelu_raw["variants"][0]["when"].insert(0, payload)
    _refused(fastgelu_raw, pointers={WHEN})


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_payload_in_derive(fastgelu_raw, payload):
    fastgelu_raw["derive"]["evil"] = payload
    fastgelu_raw["variants"][0]["when"].insert(0, "evil")
    # at load the rule's own pointer; at plan the predicate that inlines it
    _refused(fastgelu_raw, pointers={"/derive/evil", WHEN})


def _doubling_chain(raw, name: str, seed: str, op: str, steps: int, predicate: str) -> set[str]:
    """Derive rules ``name0 = seed``, ``name{i+1} = name{i} op name{i}`` for ``steps`` steps, and ``predicate``
    planted first in variant 0's ``when``; returns the rules' pointers."""
    derive = raw["derive"]
    derive[f"{name}0"] = seed
    for i in range(steps):
        derive[f"{name}{i + 1}"] = f"{name}{i} {op} {name}{i}"
    raw["variants"][0]["when"].insert(0, predicate)
    return {f"/derive/{name}{i}" for i in range(steps + 1)}


def test_exponential_derive_chain(fastgelu_raw):
    # d{i+1} = d{i} + d{i}: 64 rules whose inlined size doubles each step (2**64 nodes for d63)
    rules = _doubling_chain(fastgelu_raw, "d", "numel(shapes.X)", "+", 63, "d63 > 0")
    err = _refused(fastgelu_raw, pointers={WHEN} | rules, expect_load_error=True)
    assert "nodes" in str(err) or "too" in str(err)


def test_exponential_concat_chain(fastgelu_raw):
    # the same doubling with string concatenation
    rules = _doubling_chain(fastgelu_raw, "s", '"' + "a" * 1000 + '"', "~", 40, 's40 == ""')
    _refused(fastgelu_raw, pointers={WHEN} | rules, expect_load_error=True)


def test_wide_concat_is_capped(fastgelu_raw):
    """Strings are capped (expressions.MAX_STRING = 4096): '~' of 390 copies of a 1,900-character
    literal stays far under the inlining budget (~800 nodes) but would build a 741,000-character
    string; it must be refused, as "a" * n is."""
    derive = fastgelu_raw["derive"]
    derive["w0"] = '"' + "a" * 1900 + '"'
    derive["w1"] = " ~ ".join(["w0"] * 390)
    fastgelu_raw["variants"][0]["when"].insert(0, 'w1 == ""')
    _refused(fastgelu_raw, pointers={WHEN, "/derive/w1"})


def test_multiplicative_chain_is_bounded(fastgelu_raw):
    """Squaring 11 times: m11 inlines to 2**11 copies of m0 (~16,000 nodes, under the 20,000-node
    budget) and 9 ** 2048 is refused by the integer cap (the compile cost is bounded by the node budget)."""
    rules = _doubling_chain(fastgelu_raw, "m", "numel(shapes.X) + 1", "*", 11, "m11 > 0")
    _refused(fastgelu_raw, pointers={WHEN} | rules)


def test_chain_just_under_the_budget_is_quick(fastgelu_raw):
    # c0 = 1, c{i+1} = c{i} + c{i}: c13 inlines to 2**14 - 1 = 16383 nodes, which a manifest may use
    _doubling_chain(fastgelu_raw, "c", "1", "+", 13, "c13 == 8192")
    try:
        plan = kernel_from(fastgelu_raw).plan(profile=BASELINE, X=((8,), "float32"))
    except (ManifestError, ExpressionError) as exc:  # refusing it is fine too, with a pointer
        assert exc.pointer
    else:
        assert plan.variant == "vec4_no_bias"


def test_sandbox_leaves_the_seed_working(fastgelu_raw):
    # planting a harmless predicate the same way still plans (guards the helper above)
    fastgelu_raw["variants"][0]["when"].insert(0, "numel(shapes.X) ** 2 > 0 and 2 ** 60 > 0")
    assert kernel_from(fastgelu_raw).plan(profile=BASELINE, X=((8,), "float32")).variant == "vec4_no_bias"
