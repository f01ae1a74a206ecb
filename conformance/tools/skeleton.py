"""``python -m conformance new OP_ID --kind elementwise|rows``: a kernel repository's skeleton for a new op that lints,
generates and certifies as written (the author then changes the shader, the manifest and the reference together).

Written under ``DIR`` (default: the current directory), in the README's kernel-repository layout:
``kernels/<op id>/`` (manifest and template), ``records/`` (the op record's distribution, with its entry point),
``kernel-cases/`` (the golden files, generated with that record), ``.pre-commit-config.yaml``,
``.github/workflows/kernels.yml``, ``tox.ini`` and ``.gitignore``. ``--suite-url`` names where tox and CI install
the suite from (pinned to this version's tag); without it they keep the README's placeholder, and ``new`` says so.

The elementwise skeleton copies ``X`` to ``Y`` (vec4 and scalar variants); the rows skeleton subtracts each
row's first element from the row (``Y = X - X[..., :1]``: every output depends on its row, ``structure="rows"``),
with a data recipe of rows far from zero.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import cases
from cases.golden import digest_path, digest_text, golden_path
from conformance import __version__
from conformance.engine.package import load_package
from conformance.errors import ConformanceError
from conformance.files import check_output, write_output
from conformance.ops import register, unregister

KINDS = ("elementwise", "rows")
#: The longest op id ``new`` takes: it names folders and files (``kernel-cases/<op id>.digest``), which a file
#: system caps at 255 bytes a name.
MAX_OP_ID = 100
OP_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\.[A-Za-z_][A-Za-z0-9_]*")

TEMPLATE = """\
{% if usesF16 %}
enable f16;
{% endif %}
// {{ op }} variant {{ variant }}, pass {{ passName }}
{{ declarations }}

const WORKGROUP_SIZE: u32 = {{ workgroupSize }}u;

@compute @workgroup_size({{ workgroupSize }})
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WORKGROUP_SIZE + lid;
  if (i >= params.count) { return; }
BODY}
"""

BODIES = {
    "elementwise": """\
{% set V = "vec4<f32>" if vec4 else "f32" %}
  // The op, in f32, rounded once to the output type. This skeleton copies X: change it with the reference.
  y[i] = {{ out }}({{ V }}(x[i]));
""",
    "rows": """\
  // The op on row i / cols, in f32, rounded once to the output type. This skeleton subtracts the row's first
  // element: change it with the reference.
  let first = (i / params.cols) * params.cols;
  y[i] = {{ out }}(f32(x[i]) - f32(x[first]));
""",
}

RECORD = '''\
"""The op record of {op} ({kind} skeleton, written by `python -m conformance new`): the float64 reference, its
tolerance and, for a row op, the data it is hardest on. Change it together with the shader."""
import numpy as np

from conformance.ops import DataRecipe, OpRecord
from reference import EPS32, TINY32, Tolerance


def compute(inputs, attributes=None):
    """Y as float64, NaN where it is unconstrained (a non-finite input{row_words}, or a result the output dtype
    cannot hold: half its largest value leaves room for the f32 rounding)."""
    x = np.asarray(inputs["X"])
    z = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
{compute}        ok = ok & (np.abs(y) <= float(np.finfo(x.dtype).max) / 2)
    return {{"Y": np.where(ok, y, np.nan)}}


def tolerance(dtype, inputs=None, attributes=None):
    if dtype == "float32":   # one f32 rounding, either way; subnormal operands and the result may be flushed
        return Tolerance(4 * TINY32, 2 * EPS32, "one f32 rounding (2 u), flushed subnormals (4 x 2**-126)", dtype)
    return Tolerance(3 * 2.0**-14, 2.0**-10 + 2 * EPS32,
                     "one f32 rounding, one f16 rounding of the result (2**-10), flushed f16 subnormals", dtype)
{data}

RECORD = OpRecord("{op}", ("X",), ("Y",), compute, tolerance, structure="{kind_structure}"{data_arg},
                  words={{"unconstrained": "{unconstrained}"}})
'''

COMPUTE = {
    "elementwise": "        y = z.copy()\n        ok = np.isfinite(z)\n",
    "rows": "        y = z - z[..., :1] if z.size else z.copy()\n"
    "        ok = np.isfinite(z).all(axis=-1, keepdims=True) & np.ones(z.shape, bool)\n",
}

DATA = '''

def draw_offset(rng, shape, dtype, scale):
    """Rows far from zero (mean 1000 x scale, spread scale): where a kernel that loses the row's offset fails."""
    return rng.normal(1000.0 * scale, scale, shape)


DATA = (DataRecipe("{short}-offset", draw_offset, (1.0, 30.0), ("X",), "rows far from zero"),)
'''

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1"
description = "The op record of {op} for webgpu-kernel-conformance"

[project.entry-points."conformance.ops"]
{entry} = "{module}:RECORD"

[tool.setuptools]
py-modules = ["{module}"]
"""

PRE_COMMIT = """\
# The suite's hooks run in the developer's environment, where the op record is installed (pip install -e ./records):
# pre-commit never installs from the repository under test (docs/manual/ci.md, "A kernel repository with its own op records").
repos:
  - repo: local
    hooks:
      - id: conformance-lint
        name: kernel packages lint (schema, reachable variants, templates, bindings)
        entry: python -m conformance lint kernels --no-compile
        language: system
        files: ^(kernels|records)/
        pass_filenames: false
      - id: conformance-cases-check
        name: golden case files match the manifests and the op records
        entry: python -m cases --check --specs kernels --out kernel-cases
        language: system
        files: ^(kernels|kernel-cases|records)/
        pass_filenames: false
"""

WORKFLOW = """\
on: [push, pull_request]
jobs:
  kernels:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with: {fetch-depth: 0}
      - run: sudo apt-get update && sudo apt-get install -y mesa-vulkan-drivers libvulkan1
      - run: pip install "webgpu-kernel-conformance @ git+https://github.com/<org>/webgpu-kernel-conformance"
      - run: pip install ./records
      - run: |
          npm install --prefix "$RUNNER_TEMP/js" @huggingface/jinja@0.5.11
          echo "CONFORMANCE_JINJA_JS=$RUNNER_TEMP/js/node_modules/@huggingface/jinja" >> "$GITHUB_ENV"
      - run: python -P -m conformance lint kernels --device vulkan --require-js
      - run: python -P -m cases --specs kernels --out kernel-cases --check
      - run: python -P -m conformance diff origin/${{ github.base_ref || 'main' }} --gate --specs-path kernels --golden-path kernel-cases
      - run: python -P -m conformance certify --specs kernels --device vulkan --golden kernel-cases --report out/kernels.json
"""

#: ``lint --require-js`` needs ``CONFORMANCE_JINJA_JS`` naming @huggingface/jinja (docs/manual/ci.md, the tox recipe)
TOX = """\
[tox]
envlist = kernels
skipsdist = true

[testenv:kernels]
deps =
    webgpu-kernel-conformance @ git+https://github.com/<org>/webgpu-kernel-conformance
    -e {toxinidir}/records
passenv = XDG_RUNTIME_DIR, VK_*, CONFORMANCE_*, GATE_BASE
commands =
    python -P -m conformance lint kernels --device vulkan --require-js
    python -P -m cases --specs kernels --out kernel-cases --check
    python -P -m conformance diff {env:GATE_BASE:origin/main} --gate --specs-path kernels --golden-path kernel-cases
    python -P -m conformance certify --specs kernels --device vulkan --golden kernel-cases --report out/kernels.json
"""


GITIGNORE = """\
# written by the suite's commands and tools, never committed
out/
.tox/
__pycache__/
*.egg-info/
build/
"""

#: Where the recipes (docs/manual/ci.md, tox.ini, the CI job) install the suite from until ``--suite-url`` says.
PLACEHOLDER_URL = "git+https://github.com/<org>/webgpu-kernel-conformance"
SUITE_URL = re.compile(r"(git\+(https|ssh|file)|https|file)://[^\s'\"<>;{}]+")


def suite_url(url: str) -> str:
    """The suite's install URL for tox.ini and the CI job: a pip VCS or archive URL, pinned to this version's
    release tag (``@v<version>``) when it is a git URL that names no revision."""
    if not SUITE_URL.fullmatch(url or ""):
        raise ConformanceError(
            f"--suite-url {url!r}: expected the URL pip installs the suite from, such as "
            f"git+https://github.com/ORG/webgpu-kernel-conformance (git+ssh://, git+file://, "
            f"https:// and file:// too), with no spaces or quotes"
        )
    if url.startswith("git+file:///"):  # pip's URL requirements need a host: git reads localhost as local
        url = "git+file://localhost/" + url[len("git+file:///") :]
    if url.startswith("git+") and "@" not in urlsplit(url[4:]).path:
        url += f"@v{__version__}"
    return url


def placeholder_note(root: Path) -> str:
    return (
        f"{root / 'tox.ini'} and {root / '.github' / 'workflows' / 'kernels.yml'} install the suite from "
        f"{PLACEHOLDER_URL}: replace <org> with where your copy of the suite lives (a pip URL, pinned to a "
        f"release tag such as @v{__version__}), or run `new` with --suite-url URL (or CONFORMANCE_SUITE_URL)"
    )


def manifest(op: str, kind: str) -> dict:
    domain, name = op.rsplit(".", 1)
    rows = kind == "rows"

    def bindings(etype: str, count: str) -> list:
        fields = [{"name": "count", "type": "u32", "value": count}]
        if rows:
            fields.append({"name": "cols", "type": "u32", "value": "max(cols, 1)"})
        return [
            {"name": "x", "arg": "X", "semantic": "X", "buffer": {"type": "read-only-storage"}, "elementType": etype},
            {"name": "y", "arg": "Y", "semantic": "Y", "buffer": {"type": "storage"}, "elementType": etype},
            {
                "name": "params",
                "semantic": "kernel.params",
                "buffer": {"type": "uniform"},
                "struct": {"name": "Params", "fields": fields},
            },
        ]

    def variant(vid: str, priority: int, when: list, vec4: bool) -> dict:
        threads = "numel(shapes.X) // 4" if vec4 else "numel(shapes.X)"
        return {
            "id": vid,
            "priority": priority,
            "when": when,
            "constants": {"vec4": vec4, "out": '"vec4<" ~ dtypes.T ~ ">"' if vec4 else "dtypes.T"},
            "passes": [
                {
                    "id": "main",
                    "name": f"{name}.{vid}",
                    "shader": f"{name.lower()}.wgsl.jinja",
                    "bindings": "vec4" if vec4 else "scalar",
                    "dispatch": {"threads": threads, "workgroupSize": "workgroupSize"},
                }
            ],
        }

    derive = {
        "deviceWorkgroupCap": "min(device.limits.maxComputeInvocationsPerWorkgroup, "
        "device.limits.maxComputeWorkgroupSizeX)",
        "workgroupSize": "min(tunables.WORKGROUP_SIZE, deviceWorkgroupCap)",
        "storageBufferLimit": "min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize)",
        "buffersFit": "numel(shapes.X) * dtypeBytes(dtypes.T) <= storageBufferLimit",
        "dispatchFits": "numel(shapes.X) <= device.limits.maxComputeWorkgroupsPerDimension ** 3 * workgroupSize",
        "baseOk": "workgroupSize > 0 and f16Ok(dtypes.T) and buffersFit and dispatchFits"
        + (" and ranks.X >= 1" if rows else ""),
    }
    if rows:
        derive["cols"] = "dim(shapes.X, ranks.X - 1) if ranks.X >= 1 else 0"
        variants = [variant("scalar", 0, ["baseOk"], False)]
        binding_sets = {"scalar": bindings("$out", "numel(shapes.X)")}
    else:
        variants = [
            variant("vec4", 10, ["baseOk", "numel(shapes.X) > 0", "numel(shapes.X) % 4 == 0"], True),
            variant("scalar", 0, ["baseOk"], False),
        ]
        binding_sets = {"vec4": bindings("$out", "numel(shapes.X) // 4"), "scalar": bindings("$out", "numel(shapes.X)")}
    what = "Y = X - X[..., :1]: each row of the last axis minus its first element" if rows else "Y = X, elementwise"
    return {
        "domain": domain,
        "name": name,
        "sinceVersion": 1,
        "description": f"{what} (a skeleton written by `python -m conformance new`: change the template, this "
        f"manifest and the op record in records/ together). Float16 and float32.",
        "inputs": [{"role": "X", "dtype": "T", "description": "the input"}],
        "outputs": [
            {
                "role": "Y",
                "dtype": "T",
                "rank": "ranks.X",
                "shape": "shapes.X",
                "description": "the result, of X's shape and dtype",
            }
        ],
        "typeConstraints": {"T": ["float32", "float16"]},
        "args": {
            "X": {"kind": "tensor", "semantic": "X", "role": "input"},
            "Y": {"kind": "tensor", "semantic": "Y", "role": "output"},
        },
        "tunables": {"WORKGROUP_SIZE": 64},
        "derive": derive,
        "constants": {"usesF16": 'dtypes.T == "f16"'},
        "bindingSets": binding_sets,
        "variants": variants,
    }


def record_module(op: str, kind: str) -> str:
    short = op.rsplit(".", 1)[1].lower()
    rows = kind == "rows"
    return RECORD.format(
        op=op,
        kind=kind,
        kind_structure=kind,
        compute=COMPUTE[kind],
        row_words=" anywhere in the row" if rows else "",
        data=DATA.format(short=short) if rows else "",
        data_arg=", data=DATA" if rows else "",
        unconstrained="rows with a non-finite value, or out of range" if rows else "non-finite or out-of-range inputs",
    )


def names(op: str) -> dict[str, str]:
    module = re.sub(r"\W", "_", op.lower()) + "_record"
    return {"module": module, "dist": module.replace("_", "-"), "entry": op.rsplit(".", 1)[1].lower()}


def write_skeleton(op: str, kind: str, root: Path, url: str | None = None) -> tuple[list[Path], list[str]]:
    """Write the kernel repository's skeleton for ``op`` under ``root``: (the paths written, notes on files kept
    or written that need an edit). The golden files are generated with the new record registered for the time of
    the call; tox.ini and the CI job install the suite from ``url`` (:func:`suite_url`), else the placeholder."""
    install = suite_url(url) if url else PLACEHOLDER_URL
    if not OP_ID.fullmatch(op) or len(op) > MAX_OP_ID:
        raise ConformanceError(
            f"op id {op[:120]!r}{'...' if len(op) > 120 else ''}: expected <domain>.<Name> of "
            f"identifiers, at most {MAX_OP_ID} characters, such as com.example.Silu"
        )
    if kind not in KINDS:
        raise ConformanceError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    package_dir = root / "kernels" / op
    if package_dir.exists():
        raise ConformanceError(f"{package_dir} exists: `new` writes a new package only")
    name = op.rsplit(".", 1)[1]
    n = names(op)
    files = {
        package_dir / "manifest.json": json.dumps(manifest(op, kind), indent=2) + "\n",
        package_dir / f"{name.lower()}.wgsl.jinja": TEMPLATE.replace("BODY", BODIES[kind]),
        root / "records" / f"{n['module']}.py": record_module(op, kind),
        root / "records" / "pyproject.toml": PYPROJECT.format(op=op, **n),
        root / ".pre-commit-config.yaml": PRE_COMMIT,
        root / ".github" / "workflows" / "kernels.yml": WORKFLOW.replace(PLACEHOLDER_URL, install),
        root / "tox.ini": TOX.replace(PLACEHOLDER_URL, install),
        root / ".gitignore": GITIGNORE,
    }
    _check_targets([*files, golden_path(root / "kernel-cases", op), digest_path(root / "kernel-cases", op)])
    written, notes = [], [] if url else [placeholder_note(root)]
    for path, text in files.items():
        if path.exists() and path.parent != package_dir:
            # a repository's own configuration, or another op's record distribution, is kept
            if path.name == "pyproject.toml":
                notes.append(
                    f'{path} kept: add {n["entry"]} = "{n["module"]}:RECORD" to its '
                    f'[project.entry-points."conformance.ops"] and "{n["module"]}" to py-modules'
                )
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, text)
        written.append(path)
    return written + write_golden(op, root, root / "records" / f"{n['module']}.py"), notes


def _check_targets(paths: list[Path]) -> None:
    """Refuse every target before any folder is made: a symlinked ``kernels/`` or ``.github/`` would have a folder
    made through it, outside the repository, before the write was refused."""
    for path in paths:
        check_output(path)


def write_golden(op: str, root: Path, record_file: Path) -> list[Path]:
    """The package's golden files, generated with the record of ``record_file`` registered meanwhile."""
    spec = importlib.util.spec_from_file_location(f"_skeleton_{record_file.stem}", record_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    register(module.RECORD)
    try:
        package = load_package(root / "kernels" / op)
        generated = cases.generate(package)
        out = root / "kernel-cases"
        out.mkdir(parents=True, exist_ok=True)
        write_output(golden_path(out, op), cases.to_yaml(generated))
        write_output(digest_path(out, op), digest_text(package))
    finally:
        unregister(op)
        sys.modules.pop(spec.name, None)
    return [golden_path(out, op), digest_path(out, op)]


def next_steps(op: str) -> str:
    return textwrap.dedent(f"""\
        next: pip install -e ./records   (registers the op record of {op}; pre-commit, tox and CI need it too)
              python -P -m conformance lint kernels && python -P -m cases --specs kernels --out kernel-cases --check
              python -P -m conformance certify --specs kernels --device vulkan --golden kernel-cases""")
