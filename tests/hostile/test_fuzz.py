"""Property-based fuzzing of manifests and calls (issue 10).

Every mutated seed manifest and every random call ends in success or in one of this project's
error types (a ``ConformanceError`` subclass) whose message names the place -- the file and JSON
pointer, the argument, or the template -- never in another exception type or a hang. Hypothesis runs without a
deadline: the cost of an example is bounded by the suite's work budgets, not measured in seconds.  The example counts are in conftest.SCALE (nightly: 25x).
"""

from __future__ import annotations

import math
import resource

import numpy as np
from hypothesis import event as _hypothesis_event
from hypothesis import given, note, settings
from hypothesis import strategies as st

from conformance import BASELINE, ConformanceError, ContractError, ExpressionError, ManifestError, TemplateError
from conformance.engine.call import make_call
from conformance.engine.manifest import Manifest
from conformance.engine.package import REPO_SPECS, Package
from conformance.engine.planner import Planner
from conformance.gpu.kernel import Kernel
from conformance.shader.render import render
from tests.hostile.conftest import PROFILE as PROFILE_NAME
from tests.hostile.conftest import SEEDS, examples, seed

FILE = "fuzz.json"
NO_F16 = BASELINE.restricted("no-f16", drop_features={"shader-f16"})
PROFILES = [
    BASELINE,
    NO_F16,
    BASELINE.restricted(
        "tiny",
        limits={
            "maxBufferSize": 64,
            "maxStorageBufferBindingSize": 64,
            "maxComputeWorkgroupsPerDimension": 1,
            "maxComputeWorkgroupSizeX": 1,
            "maxComputeInvocationsPerWorkgroup": 1,
        },
    ),
]

# -- values --------------------------------------------------------------------------------------------------
HUGE = [
    2**31,
    2**32,
    2**53 + 1,
    2**63,
    2**64 + 7,
    -(2**63) - 1,
    10**30,
    10**400,
    -1,
    0,
    1e308,
    -1e308,
    1e-320,
    math.inf,
    -math.inf,
    math.nan,
]
names = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["X", "Y", "bias", "T", "main", "shapes", "__class__", "ΧΨ", "名前", "a/b", "~1", "", " ", "\x00", "é" * 40]
    ),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(HUGE),
    st.floats(allow_nan=True),
    names,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(names, inner, max_size=4)),
    max_leaves=10,
)

ATOMS = [
    "shapes.X",
    "shapes.Y",
    "shapes.bias",
    "ranks.X",
    "ranks.bias",
    "dtypes.T",
    "present.bias",
    "device.limits.maxBufferSize",
    "device.limits.maxComputeWorkgroupsPerDimension",
    "tunables.WORKGROUP_SIZE",
    "numel(shapes.X)",
    "dim(shapes.X, -1)",
    "dim(shapes.X, 99)",
    "dtypeBytes(dtypes.T)",
    "f16Ok(dtypes.T)",
    "ceilDiv(numel(shapes.X), 0)",
    "min()",
    "max(1)",
    "baseOk",
    "workgroupSize",
    "hidden",
    "vectorScalar",
    "0",
    "1",
    "-1",
    "4",
    "2**64",
    "10**20",
    "1e308",
    "0.5",
    "true",
    "false",
    "none",
    '"f16"',
    "'x'",
    "[]",
    "[1, 2]",
    "()",
    "(1,)",
    "{}",
    "x",
    "shapes",
    "device",
    "numel",
    "self",
    "''.__class__",
    "range(9)",
    "shapes.X[0]",
    "shapes.X[-9]",
    "shapes['X']",
    "loop",
    "caller",
    "varargs",
    "q" * 50,
    "1e999",
    "-1e999",
    "1e999 - 1e999",
    "1e308 * 10",
]
OPS = [
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    " and ",
    " or ",
    " ~ ",
    " in ",
    " not in ",
    " is ",
    "|",
    ".",
    ",",
]


@st.composite
def expressions(draw, depth=0):
    kind = draw(st.integers(0, 9 if depth < 3 else 2))
    if kind <= 2:
        return draw(st.sampled_from(ATOMS))
    if kind == 3:
        return draw(st.text(max_size=30))  # not an expression at all, most of the time
    if kind == 4:
        return f"not {draw(expressions(depth + 1))}"
    if kind == 5:
        return f"({draw(expressions(depth + 1))})"
    if kind == 6:
        fn = draw(
            st.sampled_from(["numel", "dim", "min", "max", "ceilDiv", "dtypeBytes", "f16Ok", "range", "lipsum", "dict"])
        )
        args = draw(st.lists(expressions(depth + 1), max_size=3))
        return f"{fn}({', '.join(args)})"
    if kind == 7:
        return f"{draw(expressions(depth + 1))} if {draw(expressions(depth + 1))} else {draw(expressions(depth + 1))}"
    return f"{draw(expressions(depth + 1))}{draw(st.sampled_from(OPS))}{draw(expressions(depth + 1))}"


# -- mutations -----------------------------------------------------------------------------------------------
def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


def _get(node, path):
    for p in path:
        node = node[p]
    return node


def _set(root, path, value):
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


@st.composite
def mutated_manifests(draw):
    name = draw(st.sampled_from(sorted(SEEDS)))
    raw = seed(name)
    applied = []
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(raw))
        op = draw(
            st.sampled_from(
                [
                    "delete",
                    "retype",
                    "rename",
                    "nest",
                    "huge",
                    "unicode",
                    "expression",
                    "expression",
                    "expression",
                    "expression",
                    "duplicate",
                    "empty",
                ]
            )
        )
        if op == "expression":  # mostly where expressions live: the string leaves (rules, predicates, dispatch)
            strings = [p for p in paths if p and isinstance(_get(raw, p), str) and p[-1] != "description"]
            if strings and draw(st.integers(0, 3)):
                paths = strings
        path = paths[draw(st.integers(0, len(paths) - 1))]
        target = _get(raw, path) if isinstance(raw, (dict, list)) else raw
        parent = _get(raw, path[:-1]) if path else None
        if op == "delete" and path:
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif op == "retype":
            raw = _set(raw, path, draw(json_values))
        elif op == "rename" and path and isinstance(parent, dict):
            parent[draw(names)] = parent.pop(path[-1])
        elif op == "nest":
            raw = _set(raw, path, draw(st.sampled_from([[target], {"value": target}, [[target]]])))
        elif op == "huge":
            raw = _set(raw, path, draw(st.sampled_from(HUGE)))
        elif op == "unicode":
            raw = _set(raw, path, draw(st.text(alphabet=st.characters(min_codepoint=0x80), min_size=1, max_size=20)))
        elif op == "expression":
            raw = _set(raw, path, draw(expressions()))
        elif op == "duplicate" and isinstance(target, list) and target:
            target.append(target[draw(st.integers(0, len(target) - 1))])
        elif op == "empty":
            raw = _set(raw, path, draw(st.sampled_from([{}, [], "", 0])))
        applied.append((op, "/" + "/".join(map(str, path))))
    note(f"seed {name}, mutations {applied}")
    return raw


# -- calls ---------------------------------------------------------------------------------------------------
DTYPES = [
    "float32",
    "float16",
    "f32",
    "f16",
    "float64",
    "bfloat16",
    "int8",
    "uint64",
    "bool",
    "complex64",
    "float8",
    "",
    "F32",
    "float32 ",
    np.float32,
    np.float16,
    np.complex64,
    np.dtype("O"),
    "object",
    None,
    3,
    float,
    "V8",
    "<f4",
    "S3",
]
dims = st.one_of(
    st.integers(0, 9),
    st.sampled_from([0, 1, 4, 2**16, 2**31, 2**32 - 1, 2**40, 2**62, 2**63, 2**64 + 1, -1, -(2**63)]),
    st.sampled_from([True, 1.5, "3", None, np.int64(7), np.uint64(2**63), float("nan")]),
)
shapes = st.one_of(
    st.lists(dims, max_size=10),
    st.tuples(dims, dims),
    st.sampled_from(
        [[2**32] * 3, [2**22] * 3, [0, 2**64], (), "4", 4, None, {"a": 1}, b"ab", range(3), [[2, 3]], np.array([2, 3])]
    ),
)
tensor_args = st.one_of(
    st.none(),
    st.tuples(shapes, st.sampled_from(DTYPES)),
    st.lists(st.one_of(shapes, st.sampled_from(DTYPES)), min_size=0, max_size=3),
    st.sampled_from([3, "X", 1.5, {"shape": [2], "dtype": "float32"}, object(), b"\x00", np.float32(1)]),
    st.builds(
        lambda shape, dtype: np.zeros(shape, dtype),
        st.lists(st.integers(0, 3), max_size=3),
        st.sampled_from([np.float32, np.float16, np.int32, np.complex64, np.bool_, np.float64]),
    ),
    st.builds(
        lambda n, dtype: np.broadcast_to(np.zeros((), dtype), (n, 2**20)),  # huge, but no memory
        st.sampled_from([0, 1, 2**10, 2**20, 2**30]),
        st.sampled_from([np.float32, np.float16]),
    ),
)
arg_names = st.one_of(
    st.sampled_from(["X", "bias", "Y", "x", "Bias", "", "X ", "__class__", "ΧΨ"]), st.integers(), st.none()
)
good_shapes = st.lists(
    st.one_of(st.integers(0, 9), st.sampled_from([0, 4, 2**16, 2**31, 2**40, 2**62, 2**64 + 1])), max_size=4
)
good_args = st.tuples(good_shapes, st.sampled_from(["float32", "float16", "float32", "float16", "f32", "int8"]))
tensor_mostly_good = st.one_of(good_args, good_args, good_args, tensor_args)
calls = st.one_of(
    st.fixed_dictionaries({"X": tensor_mostly_good}, optional={"bias": tensor_mostly_good}),
    st.fixed_dictionaries({"X": tensor_mostly_good}, optional={"bias": tensor_mostly_good}),
    st.dictionaries(arg_names, tensor_args, max_size=4),
)
tunables = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.dictionaries(
        st.sampled_from(["WORKGROUP_SIZE", "VEC", "", "wg"]),
        st.one_of(st.integers(-(2**40), 2**40), st.sampled_from([0, 1, 3, 256, 2**31, 2**32, True, 1.5, "64", None])),
        max_size=2,
    ),
)
ORDINARY = [{"X": ((4, 8), "float32"), "bias": ((8,), "float32")}, {"X": ((5,), "float16")}, {"X": ((0, 3), "float32")}]


# -- the properties ------------------------------------------------------------------------------------------
def assert_names_the_place(err: ConformanceError, *, file: str | None = FILE) -> None:
    """The message says where: file and pointer, argument, or template."""
    text = str(err)
    event(f"{type(err).__name__}: {getattr(err, 'reason', '') or ''}")
    assert text.strip(), f"{type(err).__name__} with an empty message"
    if isinstance(err, ManifestError):
        assert err.file == file and text.startswith(f"{file}:/"), text[:300]
    elif isinstance(err, ExpressionError):
        assert err.pointer.startswith("/") and err.file == file and file in text, (
            f"ExpressionError without its place (pointer {err.pointer!r}, file {err.file!r}): {text[:300]}"
        )
    elif isinstance(err, ContractError):
        assert err.reason, text[:300]
        assert err.argument is None or isinstance(err.argument, (str, int)) or err.argument is None
    elif isinstance(err, TemplateError):
        assert str(REPO_SPECS) in text or ".jinja" in text, text[:300]


def _plan_and_render(manifest: Manifest, call_args: dict, profile, tunables=None) -> None:
    planner = Planner(manifest)
    try:
        plan = planner.plan(make_call(manifest, call_args, profile, tunables))
    except ConformanceError as err:
        assert_names_the_place(err)
        return
    package = Package(REPO_SPECS / "com.microsoft.FastGelu", manifest)
    for pass_plan in plan.passes:
        try:
            text = render(package, plan, pass_plan)
        except ConformanceError as err:
            assert_names_the_place(err)
            return
        assert isinstance(text, str)
    event("planned and rendered")


def event(text: str) -> None:
    """Hypothesis statistics (``--hypothesis-show-statistics``); a no-op outside a Hypothesis test."""
    try:
        _hypothesis_event(text)
    except Exception:
        pass


_RSS = {}


def setup_module(module):
    _RSS["before"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def teardown_module(module):
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - _RSS["before"]) / 1024
    assert grown_mb < 1024, f"the fuzz tests grew the process by {grown_mb:.0f} MB"


@settings(max_examples=examples(500))
@given(raw=mutated_manifests(), call_index=st.integers(0, len(ORDINARY) - 1), profile=st.sampled_from(PROFILES))
def test_mutated_manifest_loads_or_names_the_place(raw, call_index, profile):
    try:
        manifest = Manifest(raw, file=FILE)
    except ConformanceError as err:
        assert_names_the_place(err)
        return
    _plan_and_render(manifest, ORDINARY[call_index], profile)


@settings(max_examples=examples(200))
@given(raw=mutated_manifests(), call=calls, profile=st.sampled_from(PROFILES), tunables=tunables)
def test_mutated_manifest_with_random_call(raw, call, profile, tunables):
    try:
        manifest = Manifest(raw, file=FILE)
    except ConformanceError as err:
        assert_names_the_place(err)
        return
    _plan_and_render(manifest, call, profile, tunables)


_SEED_MANIFESTS = {name: Manifest(seed(name), file=FILE) for name in SEEDS}


@settings(max_examples=examples(1150))
@given(name=st.sampled_from(sorted(SEEDS)), call=calls, profile=st.sampled_from(PROFILES), tunables=tunables)
def test_random_call_plans_or_is_rejected(name, call, profile, tunables):
    manifest = _SEED_MANIFESTS[name]
    try:
        plan = Planner(manifest).plan(make_call(manifest, call, profile, tunables))
    except ConformanceError as err:
        assert_names_the_place(err)
        return
    event("planned")
    for out in plan.outputs.values():  # an accepted plan fits the profile it was made for
        assert all(isinstance(d, int) and d >= 0 for d in out.shape)
    for pass_plan in plan.passes:
        for binding in pass_plan.bindings:
            assert binding.byte_size <= profile.limits["maxBufferSize"]


@settings(max_examples=examples(150))
@given(
    name=st.sampled_from(sorted(SEEDS)),
    call=st.dictionaries(st.sampled_from(["X", "bias", "Y", "nope"]), tensor_args, max_size=3),
)
def test_random_call_through_the_public_api(name, call):
    kernel = Kernel(Package(REPO_SPECS / name, _SEED_MANIFESTS[name]))
    try:
        kernel.plan(profile=BASELINE, **call)
    except ConformanceError as err:
        assert_names_the_place(err)


def test_example_counts():
    """The default run fuzzes at least 2,000 examples; the nightly profile (tox -e nightly) 25 times as many."""
    from tests.hostile.conftest import SCALE

    default = 500 + 200 + 1150 + 150
    assert default >= 2000 and default * SCALE["nightly"] >= 50000
    assert examples(500) + examples(200) + examples(1150) + examples(150) == default * SCALE[PROFILE_NAME]
