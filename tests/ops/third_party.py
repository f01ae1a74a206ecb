"""Another author's package: an elementwise ``Y = A * B + C (+ D + ...)`` op of n same-shape inputs, written to a
temp dir with its op record in a module registered through the ``conformance.ops`` entry point of a temp
dist-info. Nothing of the suite's code knows it."""

from __future__ import annotations

import json
import pathlib
import shutil
import textwrap

from conformance.engine.call import MAX_RANK
from conformance.tools.skeleton import TEMPLATE as SKELETON_TEMPLATE

ROLES = "ABCDEFGH"

TEMPLATE = SKELETON_TEMPLATE.replace(
    "BODY",
    """\
{% set V = "vec4<f32>" if vec4 else "f32" %}
  y[i] = {{ out }}(EXPR);
""",
)

RECORD_MODULE = '''
"""The op record of com.example.{name}: Y = A * B + (the other inputs), in float64, and its tolerance."""
import numpy as np

from conformance.ops import OpRecord
from reference import ElementTolerance

ROLES = {roles!r}
U, TINY32 = 2.0**-23, 2.0**-126


def _parts(inputs):
    arrays = [np.asarray(inputs[r], dtype=np.float64) for r in ROLES]
    with np.errstate(invalid="ignore", over="ignore"):
        product = arrays[0] * arrays[1]
        return arrays, product, product + sum(arrays[2:])


def compute(inputs, attributes=None):
    arrays, product, y = _parts(inputs)
    top = float(np.finfo(np.asarray(inputs["A"]).dtype).max)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(product) <= 3.4e38) & (np.abs(y) <= top) & np.isfinite(sum(arrays))
    return {{"Y": np.where(ok, y, np.nan)}}


def tolerance(dtype, inputs=None, attributes=None):
    arrays, product, y = _parts(inputs)
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.abs(product) + sum(np.abs(a) for a in arrays[2:])
        # one f32 rounding per operation, either way; subnormal operands may flush (|other factor| x 2**-126)
        flush = TINY32 * (np.abs(arrays[0]) + np.abs(arrays[1]) + len(arrays))
        element = np.nan_to_num(2 * (len(arrays) * U * mag + flush), nan=0.0, posinf=0.0)
    rtol = 2.0**-10 if dtype == "float16" else 0.0
    element = element + (2.0**-14 if dtype == "float16" else 0.0)
    return ElementTolerance(float(element.max()) if element.size else 0.0, rtol,
                            "A * B + ...: one f32 rounding per operation (x2), flushed subnormals; f16: one "
                            "rounding of the result", dtype, element_atol=element)


RECORD = OpRecord("com.example.{name}", ROLES, ("Y",), compute, tolerance,
                  words={{"unconstrained": "non-finite or overflowing A * B + ..."}})
'''


def same_shape(role: str) -> str:
    """``shapes.<role>`` equals ``shapes.A``, axis by axis: @huggingface/jinja compares lists by identity, so a
    loader would read ``shapes.B == shapes.A`` as false (specs/README.md, "The portable subset")."""
    axes = " and ".join(f"(ranks.A <= {k} or dim(shapes.{role}, {k}) == dim(shapes.A, {k}))" for k in range(MAX_RANK))
    return f"ranks.{role} == ranks.A and {axes}"


def manifest(name: str, n: int) -> dict:
    roles = ROLES[:n]
    same = [same_shape(r) for r in roles[1:]]
    expr = " + ".join(["V(a[i]) * V(b[i])"] + [f"V({r.lower()}[i])" for r in roles[2:]])

    def bindings(etype):
        out = [
            {"name": r.lower(), "arg": r, "semantic": r, "buffer": {"type": "read-only-storage"}, "elementType": etype}
            for r in roles
        ]
        out.append({"name": "y", "arg": "Y", "semantic": "Y", "buffer": {"type": "storage"}, "elementType": etype})
        return out

    def variant(vid, priority, when, vec4):
        threads = "numel(shapes.A) / 4" if vec4 else "numel(shapes.A)"
        return {
            "id": vid,
            "priority": priority,
            "when": when,
            "constants": {"vec4": vec4, "out": '"vec4<" ~ dtypes.T ~ ">"' if vec4 else "dtypes.T"},
            "passes": [
                {
                    "id": "main",
                    "name": f"{name}.{vid}",
                    "shader": "muladd.wgsl.jinja",
                    "bindings": bindings("$out")
                    + [
                        {
                            "name": "params",
                            "semantic": "kernel.params",
                            "buffer": {"type": "uniform"},
                            "struct": {
                                "name": "Params",
                                "fields": [{"name": "count", "type": "u32", "value": threads}],
                            },
                        }
                    ],
                    "dispatch": {"threads": threads, "workgroupSize": "tunables.WORKGROUP_SIZE"},
                }
            ],
        }

    base = ["f16Ok(dtypes.T)"] + same
    return {
        "domain": "com.example",
        "name": name,
        "sinceVersion": 1,
        "description": f"Y = A * B + the other inputs, elementwise, {n} inputs of one shape (a test package).",
        "inputs": [{"role": r, "dtype": "T", "description": f"operand {r}"} for r in roles],
        "outputs": [{"role": "Y", "dtype": "T", "rank": "ranks.A", "shape": "shapes.A", "description": "result"}],
        "typeConstraints": {"T": ["float32", "float16"]},
        "args": {
            **{r: {"kind": "tensor", "semantic": r, "role": "input"} for r in roles},
            "Y": {"kind": "tensor", "semantic": "Y", "role": "output"},
        },
        "tunables": {"WORKGROUP_SIZE": 64},
        "constants": {"usesF16": 'dtypes.T == "f16"'},
        "variants": [
            variant("vec4", 20, base + ["numel(shapes.A) > 0", "numel(shapes.A) % 4 == 0"], True),
            variant("scalar", 0, base, False),
        ],
    }, expr


def write_package(root: pathlib.Path, name: str, n: int) -> pathlib.Path:
    """The package ``com.example.<name>`` under ``root`` (manifest and template)."""
    target = root / f"com.example.{name}"
    target.mkdir(parents=True)
    raw, expr = manifest(name, n)
    (target / "manifest.json").write_text(json.dumps(raw, indent=1))
    (target / "muladd.wgsl.jinja").write_text(TEMPLATE.replace("EXPR", expr.replace("V(", "{{ V }}(")))
    return target


def write_distribution(root: pathlib.Path, name: str, n: int) -> pathlib.Path:
    """A module with the record and a dist-info whose entry point registers it (group ``conformance.ops``)."""
    module = f"example_ops_{name.lower()}"
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(RECORD_MODULE.format(name=name, roles=tuple(ROLES[:n]))))
    info = root / f"{module.replace('_', '-')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[conformance.ops]\n{name.lower()} = {module}:RECORD\n")
    return root


def outside_copy(source: pathlib.Path, root: pathlib.Path, domain: str = "com.example") -> pathlib.Path:
    """A copy of the package ``source`` under another author's ``domain`` (so no built-in record is its), in
    ``root/<domain>.<name>``."""
    raw = json.loads((source / "manifest.json").read_text())
    raw["domain"] = domain
    dst = root / f"{domain}.{raw['name']}"
    shutil.copytree(source, dst)
    (dst / "manifest.json").write_text(json.dumps(raw, indent=2))
    return dst
