"""Which workgroup sizing the row ops' version 2 should derive, and what limits it: configurations benched side by side.

Each configuration is a copy of LayerNormalization@2 and Softmax@2 (or of the version 2 of the ops ``--ops``
names) with the manifest's sizing constants or tunables replaced (spreadOne / spreadTwo: the total vec4 items
(elements for scalar rows) up to which an invocation holds 1, then 2, elements, else up to maxPerThread;
groupThreads: the invocations a workgroup of short rows aims at, rows per workgroup = groupThreads // rowThreads;
WORKGROUP_SIZE), plus version 1 as it ships. The ``floor`` configurations take the per-element work out of the
templates (is_floor) to measure what the layout alone costs; the ``const`` ones render each shape's row count and
length into the shader, the ``len`` ones take LayerNorm's from ``arrayLength``, so that no load of the params
uniform stands before a row's first load; ``finish`` and ``shift`` change how a row reduces (finish_template,
shift_template). A configuration that does not apply to an op (``len`` and ``shift`` to Softmax) runs it as ``v2``
(or ``floor``) unchanged: a same-kernel rerun, which shows the run's noise. Every configuration is benched on the
model shapes (``bench --shapes models``) and on the size grid, as ``bench`` does, one JSON:

    python research/rowops_sweep.py OUT.json [--configs v2,floor] [--ops com.microsoft.Gelu] [--min-elements N]
        [--max-elements N] [--webgpu wgpu]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from pathlib import Path

from conformance.engine.package import REPO_SPECS, load_package
from conformance.gpu.device import get_device
from conformance.gpu.kernel import Kernel
from conformance.tools import bench

CONFIGS = {  # name: constants replaced in the version-2 manifests (None: version 1 as it ships)
    "v1": None,
    "v2": {},
    "pt4": {"spreadOne": 0, "spreadTwo": 0},  # v1's elements per invocation, v2's prefetch and rows
    "pt2": {"spreadOne": 0, "spreadTwo": 1 << 40},
    "pt1": {"spreadOne": 1 << 40, "spreadTwo": 1 << 40},
    "rows1": {"groupThreads": 1},  # one row per workgroup
    "group256": {"groupThreads": 256},
    # (tree, flat, flat_pt4, flat32: the one-barrier flat reduction of commit 0fa8287, measured slower, removed)
    "wg512": {"WORKGROUP_SIZE": 512},  # upper-case keys: the manifest's tunables
    "wg1024": {"WORKGROUP_SIZE": 1024},
    "floor": {},  # no reductions at all (is_floor): not a kernel
    # (and floor_<sizing>: FLOOR_SIZINGS)
    "floor_sync1": {},  # the floor and one barrier (after the loads)
    "floor_sync2": {},  # the floor and a barrier in each reduction's place
    "const": {},  # the row count and length rendered as constants, not read from params (CONST_CONFIGS)
    "floor_const": {},
    "len": {},  # LayerNorm: the row length from arrayLength(&scale), the rows from x's (LEN_CONFIGS)
    "floor_len": {},
    "finish": {},  # each row's last G partials combined once, by its lane 0, behind a third barrier
    "shift": {},  # LayerNorm's cached rows: one vec2 tree of sums shifted by the row's first element
}
#: The floor of each sizing configuration, sized as that configuration is.
FLOOR_SIZINGS = {f"floor_{name}": name for name in ("pt4", "pt2", "pt1", "rows1", "group256", "wg512", "wg1024")}
CONFIGS.update({floor: CONFIGS[name] for floor, name in FLOOR_SIZINGS.items()})


#: The ``shift`` configuration (LayerNorm, cached rows): both statistics from one tree of vec2 sums of the values
#: shifted by the row's first element, e = x - x0: mean = x0 + S1 / n, var = S2 / n - (S1 / n)^2. One reduction
#: instead of two, no divisions in the tree (version 3's Chan merges had one per level); the variance cancels
#: when |mean - x0| is large against the spread, so its accuracy is to be checked, not assumed.
SHIFT_STATS = """  var shift = 0.0;
  if (live) { shift = {{ "load(base).x" if vec4 else "load(base)" }}; }
{% for k in ks %}
  let e{{ k }} = select({{ V }}(0.0), v{{ k }} - {{ V }}(shift), in{{ k }});
{% endfor %}
{{ reduce2("stats", "vec2<f32>(lanes(" ~ pairwise("e#", ks) ~ "), lanes(" ~ pairwise("e# * e#", ks) ~ "))", T) }}
  let m1 = stats.x * params.invCols;
  let mean = shift + m1;
  let rstd = inverseSqrt(max(stats.y * params.invCols - m1 * m1, 0.0) + params.epsilon);
{% for k in ks %}
  let d{{ k }} = select({{ V }}(0.0), v{{ k }} - {{ V }}(mean), in{{ k }});
{% endfor %}
"""


def shift_template(text: str) -> str:
    """LayerNorm's template with its cached rows' two reductions replaced by SHIFT_STATS (looped rows unchanged)."""
    start = text.index('{{ reduce("total", "lanes(" ~ pairwise("v#", ks) ~ ")", T) }}')
    end = text.index("  let rstd = inverseSqrt(squares * params.invCols + params.epsilon);\n", start)
    end += len("  let rstd = inverseSqrt(squares * params.invCols + params.epsilon);\n")
    text = text[:start] + SHIFT_STATS + text[end:]
    macro = text.index("{% macro reduce(")
    shipped = text[macro : text.index("{% endmacro %}", macro) + len("{% endmacro %}\n")]
    reduce2 = (
        shipped.replace("{% macro reduce(", "{% macro reduce2(")
        .replace("partial", "partial2")
        .replace("f32(0.0)", "vec2<f32>(0.0)")
    )  # the shipped tree on vec2 arrays
    return _declare(
        text[:macro] + reduce2 + text[macro:],
        "var<workgroup> partial2: array<vec2<f32>, WG>;\nvar<workgroup> partial2_next: array<vec2<f32>, WG>;",
    )


def finish_template(text: str) -> str:
    """A row op's template whose reduce ends differently (the ``finish`` configuration): after the shipped tree's
    two stages, lane 0 of each row segment combines the G partials (the expression every lane evaluates in the
    shipped kernel, so the same bits) into ``row_total[seg]`` behind a third barrier, and every lane reads that one
    value instead of all G. ``row_total`` is safe to reuse: the next reduction writes it only after its own first
    two barriers, which every lane reaches only after reading this one's."""
    start = text.index("{% macro reduce(")
    end = text.index("{% endmacro %}", start)
    last = text.index("{% for g in range(G) %}", start)
    combine = re.search(r"  let \{\{ name \}\} = (.*);\n", text[last:end]).group(1)
    finish = (
        "  if (t == 0u) {\n{% for g in range(G) %}\n    let {{ name }}_{{ g }} = partial_next[seg + {{ g }}u];\n"
        "{% endfor %}\n    row_total[seg] = " + combine + ";\n  }\n  workgroupBarrier();\n"
        "  let {{ name }} = row_total[seg];\n"
    )
    return _declare(text[:last] + finish + text[end:], "var<workgroup> row_total: array<f32, WG>;")


def _declare(text: str, declaration: str) -> str:
    """``text`` with ``declaration`` on its own line after the tree's second workgroup array (and its comment)."""
    at = text.index("var<workgroup> partial_next: array<f32, WG>;")
    at = text.index("\n", at) + 1
    return text[:at] + declaration + "\n" + text[at:]


#: Configurations that render each shape's row count and length into the shader instead of reading them from the
#: params uniform, so no load of it stands before a row's first load of x (one shader per shape: not a shippable
#: kernel; it measures what that dependent load costs).
CONST_CONFIGS = {"const", "floor_const"}
#: Configurations in which LayerNorm takes its row length from arrayLength(&scale) and its row count from x's, as the
#: copy shaders take their length (Softmax binds no tensor of the row's length). Buffers are bound padded to 4
#: bytes, so f16 scalar rows keep the params uniform: arrayLength would count an odd row's padding.
LEN_CONFIGS = {"len", "floor_len"}


def shape_edits(name: str, op: str) -> list[tuple[str, str]]:
    """(text, replacement) edits of configuration ``name``'s templates for op ``op`` (each text must occur)."""
    if name in CONST_CONFIGS:
        return [
            ("params.rows", "{{ rowsConst }}u"),
            ("params.items", "{{ (itemsConst // 4) if vec4 else itemsConst }}u"),
        ]
    if name in LEN_CONFIGS and op == "com.microsoft.LayerNormalization":
        exact = "not usesF16 or vec4"  # the bindings' arrayLength is the tensor's (see LEN_CONFIGS)
        return [
            (
                "params.rows",
                "{% if " + exact + " %}(arrayLength(&x) / arrayLength(&scale)){% else %}params.rows{% endif %}",
            ),
            ("params.items", "{% if " + exact + " %}arrayLength(&scale){% else %}params.items{% endif %}"),
        ]
    return []


def is_floor(name: str) -> bool:
    """Whether configuration ``name`` is a floor: templates whose per-element work is gone (the row ops reduce
    nothing, each row's "sum" is the lane's own value; GELU is the identity): wrong outputs, timed only as the
    floor of the layout, the same loads, stores and dispatch."""
    return name.startswith("floor")


#: The barriers the floor's reduce keeps in each floor configuration: none, one in the first reduction's place, or
#: one in each reduction's place.
FLOOR_BARRIERS = {"": "never", "_sync1": "first", "_sync2": "always"}
#: The name each row op's template gives its first reduction.
FIRST_REDUCTION = {"com.microsoft.LayerNormalization": "total", "com.microsoft.Softmax": "top"}


def floor_macros(name: str, first_reduction: str = "") -> dict[str, str]:
    """macro name -> its replacement in floor configuration ``name`` (a template replaces those it defines)."""
    barrier = {
        "never": "",
        "always": "  workgroupBarrier();\n",
        "first": '{% if name == "' + first_reduction + '" %}\n  workgroupBarrier();\n{% endif %}\n',
    }
    keep = FLOOR_BARRIERS.get(name[len("floor") :], "never")
    # the row ops' reduce(name, value, size[, op]): extra arguments taken (varargs) and ignored
    return {
        "reduce": "{% macro reduce(name, value) %}\n{% if varargs %}{% endif %}\n"
        + barrier[keep]
        + "  let {{ name }} = {{ value }};\n{% endmacro %}",
        "gelu_fn": "{% macro gelu_fn(name, T) %}\nfn {{ name }}(x: {{ T }}) -> {{ T }} { return x; }\n{% endmacro %}",
    }


def floor_template(text: str, macros: dict[str, str]) -> str:
    for macro, replacement in macros.items():
        if "{% macro " + macro + "(" in text:
            start = text.index("{% macro " + macro + "(")
            end = text.index("{% endmacro %}", start) + len("{% endmacro %}")
            text = text[:start] + replacement + text[end:]
    return text


ROW_OPS = ("com.microsoft.LayerNormalization", "com.microsoft.Softmax")


def configured_template(name: str, op: str, text: str) -> str:
    """Op ``op``'s version-2 template ``text`` as configuration ``name`` runs it."""
    if name == "finish":
        text = finish_template(text)
    if name == "shift" and op == "com.microsoft.LayerNormalization":
        text = shift_template(text)
    for old, new in shape_edits(name, op):
        if old not in text:
            raise ValueError(f"configuration {name}: {old!r} is not in {op}'s template")
        text = text.replace(old, new)
    if is_floor(name):
        text = floor_template(text, floor_macros(name, FIRST_REDUCTION.get(op, "")))
    return text


def packages(name: str, scratch: Path, ops=ROW_OPS) -> list:
    """The packages configuration ``name`` benches: version 1 as it ships (``v1``), else copies of the ops' version
    2 under ``scratch`` with CONFIGS[name]'s constants and tunables and configured_template's templates."""
    config = CONFIGS[name]
    if config is None:
        return [load_package(REPO_SPECS / op) for op in ops]
    out = []
    for op in ops:
        dst = scratch / f"{op}@2"
        shutil.copytree(REPO_SPECS / f"{op}@2", dst, dirs_exist_ok=True)
        manifest = json.loads((dst / "manifest.json").read_text())
        manifest["constants"].update({k: v for k, v in config.items() if not k.isupper()})
        manifest["tunables"].update({k: v for k, v in config.items() if k.isupper()})
        if name in CONST_CONFIGS:
            for variant in manifest["variants"]:
                variant["constants"].update({"rowsConst": "rows", "itemsConst": "cols"})
        (dst / "manifest.json").write_text(json.dumps(manifest, indent=2))
        for template in dst.glob("*.jinja"):
            template.write_text(configured_template(name, op, template.read_text()))
        out.append(load_package(dst))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--ops", default=",".join(ROW_OPS), help="op ids whose version 2 is configured (version 1: v1)")
    ap.add_argument("--min-elements", type=int, default=1 << 18)
    ap.add_argument("--max-elements", type=int, default=1 << 22)
    ap.add_argument("--webgpu", default="wgpu")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup-seconds", type=float, default=0.2)
    args = ap.parse_args()
    device = get_device("vulkan", None, args.webgpu)
    options = dict(
        reps=args.reps,
        sweep=False,
        write_tuning=False,
        out=None,
        plot=None,
        warmup_seconds=args.warmup_seconds,
        cuda_copy=False,
    )
    result = {"device": device.summary, "webgpu": args.webgpu, "configs": {}, "rows": []}
    for name in args.configs.split(","):
        with tempfile.TemporaryDirectory() as scratch:
            # untuned: the device's tuning table (for the shipped packages) must not replace a configuration's
            # WORKGROUP_SIZE
            copies = packages(name, Path(scratch), args.ops.split(","))
            kernels = [Kernel(p, device, tuned=False) for p in copies]
            for shapes in ("models", None):
                run = bench.run_bench(
                    kernels, min_elements=args.min_elements, max_elements=args.max_elements, shapes=shapes, **options
                )
                result["rows"] += [r | {"config": name} for r in run["rows"]]
        result["configs"][name] = CONFIGS[name]
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(f"{name}: done, {len(result['rows'])} rows", flush=True)
    for r in result["rows"]:
        print(
            f"{r['config']:<13}{r['package'][14:]:<20}{r['variant']:<18}{r['dtype']:<8}{str(r['shape']):<20}"
            f"{r['workgroup_size']:>5}{r['best_copy_ratio']:>7.3f}"
        )


if __name__ == "__main__":
    main()
