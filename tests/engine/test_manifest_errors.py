"""Malformed manifests: each kind of mistake is a ManifestError naming the file, the JSON pointer and what was wrong.

Each row changes one thing in a copy of a seed manifest. Pointers index the manifest as written
(``/variants/2`` is the third variant in the file, whatever its priority).
"""

from __future__ import annotations

import json

import pytest

from conformance import BASELINE, ConformanceError, ContractError, ManifestError, load_kernel
from conformance.engine.manifest import Manifest, load_manifest
from tests.engine.conftest import FASTGELU, GELU, SPECS, kernel_from

FILE = "x.json"


def _set(path, value):
    """A mutation setting raw[path...] = value."""

    def mutate(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _delete(path):
    def mutate(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


def _append(path, value):
    def mutate(raw):
        node = raw
        for key in path:
            node = node[key]
        node.append(value)

    return mutate


def _both(*mutations):
    def mutate(raw):
        for m in mutations:
            m(raw)

    return mutate


def _manifest_error(raw) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        Manifest(raw, file=FILE)
    return info.value


CASES = [
    # (id, manifest, mutation, expected pointer, substrings of the message)
    # (a tuple in place of a pointer or a substring lists alternatives, any one of which will do)
    # --- schema -------------------------------------------------------------------------------
    ("missing-variant-id", FASTGELU, _delete(["variants", 0, "id"]), "/variants/0", ["'id' is a required property"]),
    ("missing-top-level", GELU, _delete(["variants"]), "", ["'variants' is a required property"]),
    # inline bindings: the pointer must reach the binding, not stop at the pass's "bindings" (see the report)
    (
        "missing-binding-buffer",
        GELU,
        _delete(["variants", 1, "passes", 0, "bindings", 1, "buffer"]),
        "/variants/1/passes/0/bindings/1",
        ["'buffer'"],
    ),
    (
        "wrong-type-priority",
        FASTGELU,
        _set(["variants", 0, "priority"], "high"),
        "/variants/0/priority",
        ["'high' is not of type 'integer'"],
    ),
    ("wrong-type-rank", FASTGELU, _set(["inputs", 1, "rank"], "one"), "/inputs/1/rank", ["'one'"]),
    ("wrong-type-when", FASTGELU, _set(["variants", 0, "when"], "baseOk"), "/variants/0/when", ["array"]),
    ("when-entry-object", GELU, _set(["variants", 0, "when", 1], {"f16Ok": "T"}), "/variants/0/when/1", []),
    ("unknown-field-variant", FASTGELU, _set(["variants", 0, "colour"], "red"), "/variants/0", ["colour"]),
    ("unknown-field-top", GELU, _set(["extra"], 1), "", ["extra"]),
    (
        "unknown-field-binding",
        FASTGELU,
        _set(["bindingSets", "vec4", 0, "offset"], 0),
        "/bindingSets/vec4/0",
        ["offset"],
    ),
    (
        "unknown-buffer-type",
        GELU,
        _set(["variants", 0, "passes", 0, "bindings", 0, "buffer", "type"], "texture"),
        "/variants/0/passes/0/bindings/0/buffer/type",
        ["texture"],
    ),
    (
        "dtype-not-in-enum",
        FASTGELU,
        _set(["typeConstraints", "T"], ["float32", "float128"]),
        "/typeConstraints/T/1",
        ["float128"],
    ),
    # storage bindings need arg and elementType; uniform ones need a struct
    (
        "uniform-without-struct",
        GELU,
        _delete(["variants", 0, "passes", 0, "bindings", 2, "struct"]),
        "/variants/0/passes/0/bindings/2",
        ["struct"],
    ),
    # --- names in expressions -------------------------------------------------------------------
    ("unknown-role", FASTGELU, _set(["derive", "vec4Ok"], "numel(shapes.Z) > 0"), "/derive/vec4Ok", ["shapes.Z"]),
    (
        "unknown-limit",
        FASTGELU,
        _set(["derive", "storageBufferLimit"], "min(device.limits.maxFoo, 1)"),
        "/derive/storageBufferLimit",
        ["maxFoo"],
    ),
    # Rows marked ROOT put the unknown name at the root of the expression ("foo", "tunables.NOPE"),
    # where the engine's name check does not look (see the report); the nested twins pass.
    (
        "unknown-tunable-nested",
        GELU,
        _set(["variants", 0, "passes", 0, "dispatch", "workgroupSize"], "min(tunables.NOPE, 256)"),
        "/variants/0/passes/0/dispatch/workgroupSize",
        ["NOPE"],
    ),
    (
        "unknown-bare-name-nested",
        FASTGELU,
        _append(["variants", 1, "when"], "foo and true"),
        "/variants/1/when/3",
        ["'foo'"],
    ),
    # ROOT
    (
        "unknown-device-attr",
        FASTGELU,
        _set(["derive", "storageBufferLimit"], "device.memory"),
        "/derive/storageBufferLimit",
        ["device.memory"],
    ),
    # ROOT
    (
        "unknown-tunable",
        GELU,
        _set(["variants", 0, "passes", 0, "dispatch", "workgroupSize"], "tunables.NOPE"),
        "/variants/0/passes/0/dispatch/workgroupSize",
        ["NOPE"],
    ),
    # ROOT
    ("unknown-bare-name", FASTGELU, _append(["variants", 1, "when"], "foo"), "/variants/1/when/3", ["'foo'"]),
    # ROOT
    ("unknown-typevar", GELU, _set(["constants", "scalar"], "dtypes.U"), "/constants/scalar", ["dtypes.U"]),
    ("unknown-function", GELU, _append(["variants", 1, "when"], "abs(-1) > 0"), "/variants/1/when/2", ["'abs'"]),
    # ROOT
    ("unknown-name-output-rank", GELU, _set(["outputs", 0, "rank"], "ranks.W"), "/outputs/0/rank", ["ranks.W"]),
    (
        "unknown-name-struct-field",
        GELU,
        _set(["variants", 1, "passes", 0, "bindings", 2, "struct", "fields", 0, "value"], "numel(shapes.W)"),
        "/variants/1/passes/0/bindings/2/struct/fields/0/value",
        ["shapes.W"],
    ),
    # `hidden` is a constant of vec4_bias, not of vec4_tail_no_bias (variants/3)
    (
        "other-variants-constant",
        FASTGELU,
        _append(["variants", 3, "when"], "hidden > 0"),
        "/variants/3/when/3",
        ["'hidden'"],
    ),
    # --- bindings -------------------------------------------------------------------------------
    (
        "missing-binding-set",
        FASTGELU,
        _set(["variants", 0, "passes", 0, "bindings"], "vec4Biass"),
        "/variants/0/passes/0/bindings",
        ["vec4Biass"],
    ),
    # inline binding: the scalar variant has no vectorScalar constant
    (
        "dollar-not-constant-inline",
        GELU,
        _set(["variants", 1, "passes", 0, "bindings", 0, "elementType"], "$vectorScalar"),
        "/variants/1/passes/0/bindings/0",
        ["$vectorScalar", "'x'", "'scalar'"],
    ),
    (
        "dollar-length-not-constant",
        GELU,
        _set(["variants", 0, "passes", 0, "bindings", 0, "length"], "$nope"),
        "/variants/0/passes/0/bindings/0",
        ["$nope"],
    ),
    # binding set: vec4_no_bias (variants/1) has no `hidden`, which vec4Bias's bias length needs
    (
        "dollar-not-constant-set",
        FASTGELU,
        _set(["variants", 1, "passes", 0, "bindings"], "vec4Bias"),
        "/variants/1/passes/0/bindings",
        ["$hidden", "'bias'", "vec4_no_bias"],
    ),
    (
        "arg-not-in-args-inline",
        GELU,
        _set(["variants", 0, "passes", 0, "bindings", 0, "arg"], "W"),
        "/variants/0/passes/0/bindings/0/arg",
        ["'W'"],
    ),
    ("arg-not-in-args-set", FASTGELU, _set(["bindingSets", "vec4", 0, "arg"], "W"), "/bindingSets/vec4/0/arg", ["'W'"]),
    ("args-without-tensor", GELU, _set(["args", "W"], {"kind": "tensor", "role": "input"}), "/args/W", ["'W'"]),
    # --- rules ----------------------------------------------------------------------------------
    # a cycle may be reported from any of its rules; the message walks it once round
    (
        "derive-cycle",
        FASTGELU,
        _both(_set(["derive", "a"], "b + 1"), _set(["derive", "b"], "a + 1")),
        ("/derive/a", "/derive/b"),
        ["cycle", ("a -> b -> a", "b -> a -> b")],
    ),
    ("derive-self-cycle", FASTGELU, _set(["derive", "x"], "x + 1"), "/derive/x", ["x -> x"]),
    # deviceWorkgroupCap -> workgroupSize -> deviceWorkgroupCap, through the seed's own rules
    (
        "derive-cycle-seed-rules",
        FASTGELU,
        _set(["derive", "deviceWorkgroupCap"], "min(workgroupSize, 256)"),
        ("/derive/deviceWorkgroupCap", "/derive/workgroupSize"),
        [
            (
                "deviceWorkgroupCap -> workgroupSize -> deviceWorkgroupCap",
                "workgroupSize -> deviceWorkgroupCap -> workgroupSize",
            )
        ],
    ),
    ("reserved-derive-name", FASTGELU, _set(["derive", "shapes"], "1"), "/derive/shapes", ["reserved"]),
    ("constant-named-like-derive", FASTGELU, _set(["constants", "baseOk"], "true"), "/constants/baseOk", ["baseOk"]),
    (
        "variant-constant-shadows-derive",
        FASTGELU,
        _set(["variants", 0, "constants", "biasOk"], True),
        "/variants/0/constants/biasOk",
        ["biasOk"],
    ),
    # --- variants -------------------------------------------------------------------------------
    ("duplicate-variant-id", FASTGELU, _set(["variants", 1, "id"], "vec4_bias"), "/variants/1/id", ["'vec4_bias'"]),
    (
        "duplicate-priority",
        FASTGELU,
        _set(["variants", 1, "priority"], 30),
        "/variants/1/priority",
        ["30", "vec4_bias"],
    ),
    (
        "duplicate-pass-id",
        GELU,
        lambda raw: raw["variants"][0]["passes"].append(dict(raw["variants"][0]["passes"][0])),
        "/variants/0/passes/1/id",
        ["'main'"],
    ),
    (
        "typevar-not-in-constraints",
        FASTGELU,
        _set(["inputs", 0, "dtype"], "U"),
        "/inputs/0/dtype",
        ["'U'", "typeConstraints"],
    ),
    (
        "output-typevar-not-in-constraints",
        GELU,
        _set(["outputs", 0, "dtype"], "U"),
        "/outputs/0/dtype",
        ["'U'", "typeConstraints"],
    ),
    ("duplicate-role", FASTGELU, _set(["inputs", 1, "role"], "X"), "/inputs/1/role", ["'X'"]),
    # --- syntax ---------------------------------------------------------------------------------
    (
        "syntax-error-when",
        FASTGELU,
        _set(["variants", 2, "when", 1], "biasOk and"),
        "/variants/2/when/1",
        ["syntax error"],
    ),
    (
        "syntax-trailing-tokens",
        GELU,
        _set(["variants", 0, "passes", 0, "dispatch", "threads"], "numel(shapes.X) 4"),
        "/variants/0/passes/0/dispatch/threads",
        ["unexpected"],
    ),
    (
        "syntax-error-derive",
        FASTGELU,
        _set(["derive", "noBiasOk"], "not (present.bias"),
        "/derive/noBiasOk",
        ["syntax error"],
    ),
    (
        "syntax-error-output-shape",
        GELU,
        _set(["outputs", 0, "shape"], "shapes.X +"),
        "/outputs/0/shape",
        ["syntax error"],
    ),
    (
        "packing-unknown",
        GELU,
        _set(["variants", 0, "passes", 0, "bindings", 0, "packing"], "4x8unorm"),
        "/variants/0/passes/0/bindings/0/packing",
        ["2x16float"],
    ),
    (
        "packing-on-uniform",
        GELU,
        _set(["variants", 0, "passes", 0, "bindings", 2, "packing"], "2x16float"),
        "/variants/0/passes/0/bindings/2/packing",
        ["packing applies to storage bindings"],
    ),
]


@pytest.mark.parametrize("seed, mutate, pointer, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_manifest(request, seed, mutate, pointer, expected):
    raw = request.getfixturevalue("fastgelu_raw" if seed == FASTGELU else "gelu_raw")
    mutate(raw)
    err = _manifest_error(raw)
    assert err.file == FILE
    pointers = pointer if isinstance(pointer, tuple) else (pointer,)
    assert err.pointer in pointers, str(err)
    assert str(err).startswith(f"{FILE}:{err.pointer or '/'}: ")
    for text in expected:
        alternatives = text if isinstance(text, tuple) else (text,)
        assert any(t in str(err) for t in alternatives), str(err)


def test_every_problem_is_reported(fastgelu_raw):
    # two independent mistakes in one manifest: both are listed with their own pointers
    fastgelu_raw["derive"]["vec4Ok"] = "numel(shapes.Z) > 0"
    fastgelu_raw["variants"][2]["when"][1] = "biasOk and"
    err = _manifest_error(fastgelu_raw)
    pointers = {p.pointer for p in err.problems}
    assert {"/derive/vec4Ok", "/variants/2/when/1"} <= pointers
    assert "more problem" in str(err)


def test_errors_are_value_errors(gelu_raw):
    del gelu_raw["variants"]
    err = _manifest_error(gelu_raw)
    assert isinstance(err, ValueError) and isinstance(err, ConformanceError)


# -- derive order ---------------------------------------------------------------------------------

CALLS = [
    ({"X": ((2, 8), "float32"), "bias": ((8,), "float32")}, "vec4_bias"),
    ({"X": ((4, 3), "float16"), "bias": ((3,), "float16")}, "vec4_tail_bias"),
    ({"X": ((5,), "float32")}, "vec4_tail_no_bias"),
    ({"X": ((0, 4), "float32")}, "scalar_no_bias"),
    ({"X": ((8,), "float32")}, "vec4_no_bias"),
]


@pytest.mark.parametrize("order", ["reversed", "users-first"])
def test_derive_rules_in_any_order(fastgelu_raw, order):
    derive = fastgelu_raw["derive"]
    if order == "reversed":
        names = list(reversed(derive))
    else:  # baseOk (which uses everything) first, the rules it builds on last
        names = [
            "baseOk",
            "dispatchFits",
            "buffersFit",
            "workgroupSize",
            "storageBufferLimit",
            "deviceWorkgroupCap",
            "biasOk",
            "noBiasOk",
            "vec4Ok",
        ]
        assert sorted(names) == sorted(derive)
    fastgelu_raw["derive"] = {n: derive[n] for n in names}
    k = kernel_from(fastgelu_raw)
    for args, variant in CALLS:
        assert k.plan(profile=BASELINE, **args).variant == variant
    clamped = BASELINE.restricted("narrow", limits={"maxComputeWorkgroupSizeX": 128})
    assert k.plan(profile=clamped, X=((2048,), "float32")).passes[0].dispatch.workgroup_size == 128


# -- files ----------------------------------------------------------------------------------------


def test_malformed_json_line_and_column(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text('{"domain": "com.microsoft",\n "name": }\n', encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert info.value.file == str(path)
    assert str(path) in str(info.value)
    # the "}" after "name": is on line 2, column 10
    assert "line 2 column 10" in str(info.value)


def test_malformed_json_through_load_kernel(tmp_path):
    package = tmp_path / "com.example.Broken"
    package.mkdir()
    text = (SPECS / GELU / "manifest.json").read_text(encoding="utf-8")
    lines = text.splitlines()
    lines[2] = lines[2].rstrip(",")  # drop the comma after "name": "Gelu" (line 3)
    (package / "manifest.json").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_kernel(package)
    assert str(package / "manifest.json") in str(info.value)
    assert "line 4 column" in str(info.value)


def test_top_level_not_an_object(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert info.value.file == str(path) and "object" in str(info.value)


def _duplicate_key_file(tmp_path):
    text = (SPECS / FASTGELU / "manifest.json").read_text(encoding="utf-8")
    assert text.count('"priority": 30,') == 1
    path = tmp_path / "manifest.json"
    path.write_text(text.replace('"priority": 30,', '"priority": 30, "priority": 31,'), encoding="utf-8")
    return path, text


def test_duplicate_json_keys_refused(tmp_path):
    path, _ = _duplicate_key_file(tmp_path)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert info.value.file == str(path)
    assert "duplicate key 'priority'" in str(info.value)


def test_duplicate_json_keys_located(tmp_path):
    """The issue: every error names the file and the JSON path. A duplicate key deep in a
    200-line manifest must say where it is: the pointer of its object (/variants/0) or its line."""
    path, text = _duplicate_key_file(tmp_path)
    line = text[: text.index('"priority": 30,')].count("\n") + 1
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    err = info.value
    assert err.pointer in ("/variants/0", "/variants/0/priority") or f"line {line}" in str(err), str(err)


def test_unknown_package_lists_known(tmp_path):
    with pytest.raises(ManifestError) as info:
        load_kernel("com.microsoft.NoSuchKernel")
    assert "com.microsoft.FastGelu" in str(info.value) and "com.microsoft.Gelu" in str(info.value)


def test_seed_manifests_load_by_path():
    for name in (FASTGELU, GELU):
        m = load_manifest(SPECS / name / "manifest.json")
        assert m.op_id == name
        assert load_kernel(SPECS / name).manifest.op_id == name


def test_plan_time_expression_error_has_pointer(gelu_raw):
    # well-formed but fails when evaluated: integer division by zero in a when predicate
    gelu_raw["variants"][1]["when"].append("numel(shapes.X) // 0 == 0")
    k = kernel_from(gelu_raw)
    with pytest.raises(ConformanceError) as info:
        k.plan(profile=BASELINE, X=((6,), "float32"))
    assert not isinstance(info.value, ContractError)
    assert isinstance(info.value, ValueError)
    assert info.value.pointer == "/variants/1/when/2"
    assert FILE in str(info.value)


def test_seed_text_round_trips(tmp_path):
    # the seed, written out again unchanged, loads (guards the helpers above)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(json.loads((SPECS / GELU / "manifest.json").read_text())), encoding="utf-8")
    assert load_manifest(path).op_id == GELU
