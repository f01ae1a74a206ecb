"""The js-loader column certifies a loader on what it dispatched on the page's device, not on what it says.

The page hands the loader its device through a watch (``watchDevice`` in ``page_loader.mjs``) that records each
``kernel()`` call's shader modules, pipelines, dispatches and submits, and copies each output binding right behind
the compute pass that wrote it. Each planted loader here returns the reference loader's plan (so the plan
comparison passes) and, where it returns values, values within the tolerance (so the value check passes): only
what the page saw on its device can fail it, and each test says which part of that record does. Each of them
conformed before the page watched the device.

Marked ``browsers`` (``--run-browsers``): each test loads a loader into a real Chromium page.
"""

from __future__ import annotations

import pytest

from conformance.certify.checker import Checker
from conformance.certify.outcomes import CaseFailed, CaseNotApplicable, verdict_for
from conformance.certify.report import device_line
from tests.browsers.test_js_loader import loader_impl
from tests.browsers.test_onnxruntime_web import _golden
from tests.loader.planted import planted_loader

pytestmark = pytest.mark.browsers

NOTHING = "the loader dispatched nothing on the page's device: its outputs were not computed by a kernel"

#: GELU in JavaScript, in float64 (more accurate than the package's kernel, so well within its tolerance).
GELU_JS = """
function erfc(a) {   // a >= 2.5: the continued fraction, evaluated from its 60th term back
  let k = a;
  for (let n = 60; n >= 1; n--) k = a + (n / 2) / k;
  return Math.exp(-a * a) / (Math.sqrt(Math.PI) * k);
}
function erf(t) {
  const a = Math.abs(t);
  if (a >= 2.5) return Math.sign(t) * (1 - erfc(a));
  let term = t, sum = t;
  for (let n = 1; n < 200; n++) { term *= -t * t / n; sum += term / (2 * n + 1); }
  return 2 / Math.sqrt(Math.PI) * sum;
}
const gelu = (v) => { const t = v / Math.SQRT2; return t < -2.5 ? 0.5 * v * erfc(-t) : 0.5 * v * (1 + erf(t)); };
"""

#: The loader of issue 51: the reference loader's plans and refusals, GELU computed in JavaScript (float64, then
#: rounded to float32), no WebGPU call, and stats() saying nothing was dispatched.
ON_THE_CPU = (
    """import { getKernel as reference } from "./index.js";
"""
    + GELU_JS
    + """
export async function getKernel(source, options) {
  const k = await reference(source, options);
  const kernel = async (inputs, opts = {}) => {
    const plan = await k.plan(inputs, opts);
    const out = {};
    for (const [role, o] of Object.entries(plan.outputs)) {
      out[role] = { data: Float32Array.from(inputs.X.data, gelu), shape: [...o.shape], dtype: o.dtype };
    }
    return out;
  };
  kernel.plan = k.plan;
  kernel.stats = async () => ({ compilations: 0, dispatches: 0 });
  return kernel;
}
"""
)

#: (module body around the reference kernel `k`, package, case, the failure's words): each dispatches on the page's
#: device or returns what the reference kernel returned, but not both.
WRAPPED = {
    # the reference kernel ran, but the first output element was moved by one ULP: within any tolerance
    "nudged": (
        "const out = await k(inputs, opts); new Uint32Array(out.Y.data.buffer)[0] += 1; return out;",
        "com.microsoft.Gelu",
        "Gelu/f32/X[4,3]/vec4",
        "output Y: kernel() returned other values than the dispatched kernel left in its output binding "
        "(first at element 0 of 12): they were not computed by the kernel",
    ),
    # the same on the last element, which a pass of vectors and a tail writes through its second binding of C
    "nudged-tail": (
        "const out = await k(inputs, opts); const u = new Uint32Array(out.C.data.buffer); "
        "u[u.length - 1] += 1; return out;",
        "ai.onnx.Add",
        "Add/f32/A[1030]+B[1030]/split_same~WORKGROUP_SIZE=192",
        "output C: kernel() returned other values than the dispatched kernel left in its output binding "
        "(first at element 1029 of 1030)",
    ),
    # the reference loader on a device of its own (it opens one when given none)
    "own-device": ("return k(inputs, opts);", "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4", NOTHING),
}

GETKERNEL = """import {{ getKernel as real }} from "./index.js";
export async function getKernel(source, options) {{
  const k = await real(source, {own});
  const kernel = async (inputs, opts) => {{ {body} }};
  kernel.plan = k.plan;
  kernel.stats = async () => ({{ compilations: 0, dispatches: 0 }});
  return kernel;
}}
"""

#: plant -> (file of the reference loader, [(old, new), ...], the failure's words or their parts): its plan stays
#: right, its work does not.
DISPATCH = "cpass.dispatchWorkgroups(x, y, z);"
PASSES_END = "        this.dispatches++;\n      }\n"
PLANTS = {
    "dispatched-twice": (
        "gpu.js",
        [(DISPATCH, DISPATCH + " " + DISPATCH)],
        "the loader dispatched 2 kernel(s) on the page's device ([1, 1, 1], [1, 1, 1]), the plan 1 "
        "(Gelu.vec4 [1, 1, 1])",
    ),
    "one-workgroup-more": (
        "gpu.js",
        [(DISPATCH, "cpass.dispatchWorkgroups(x + 1, y, z);")],
        "dispatch 1 (pass Gelu.vec4) ran [2, 1, 1] workgroups, the plan [1, 1, 1]",
    ),
    "indirect": (
        "gpu.js",
        [
            (
                DISPATCH,
                "const ib = buffer(12, usage.INDIRECT | usage.COPY_DST, 'indirect'); "
                "d.queue.writeBuffer(ib, 0, new Uint32Array([x, y, z])); "
                "cpass.dispatchWorkgroupsIndirect(ib, 0);",
            )
        ],
        "dispatch 1 (pass Gelu.vec4) is indirect (dispatchWorkgroupsIndirect): its workgroup counts cannot "
        "be held to the plan's [1, 1, 1]",
    ),
    # another kernel than the package's: its values still pass (the clamp only moves values far in the tails)
    "other-wgsl": (
        "gpu.js",
        [
            (
                "d.createShaderModule({ code: text,",
                "d.createShaderModule({ code: text.replace('const CLAMP: f32 = 10.0;', 'const CLAMP: f32 = 9.0;'),",
            )
        ],
        (
            "dispatch 1 (pass Gelu.vec4): its pipeline's WGSL is not what the package renders for this "
            "plan: compiled line ",
            " 'const CLAMP: f32 = 9.0;', rendered line ",
            " 'const CLAMP: f32 = 10.0;'",
        ),
    ),
    # the kernel runs as planned, then a copy in the same command buffer writes GELU computed in JavaScript over
    # its output, and that is what is read back and returned
    "copied-over": (
        "gpu.js",
        [
            ("usage.STORAGE | usage.COPY_SRC, role)", "usage.STORAGE | usage.COPY_SRC | usage.COPY_DST, role)"),
            (
                PASSES_END,
                PASSES_END
                + GELU_JS
                + """
      for (const [role, size] of Object.entries(outputBytes)) {
        if (size === 0) continue;
        const x = new Float32Array(inputs.X.slice().buffer);
        const staged = buffer(padded(size), usage.COPY_SRC | usage.COPY_DST, "computed in JavaScript");
        d.queue.writeBuffer(staged, 0, Float32Array.from(x, gelu));
        encoder.copyBufferToBuffer(staged, 0, tensors.get(role), 0, padded(size));
      }
""",
            ),
        ],
        "output Y: kernel() returned other values than the dispatched kernel left in its output binding (first at "
        "element ",
    ),
}


def planted(tmp_path, file, edits):
    """The reference loader with every edit made (each old text occurring once), its index.js as the module."""
    root = planted_loader(tmp_path, file, *edits[0])
    target = root / "src" / file
    for old, new in edits[1:]:
        text = target.read_text()
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in loader/src/{file}"
        target.write_text(text.replace(old, new))
    return root / "src" / "index.js"


#: The reference loader behind a module that checks the handed device is what WebGPU's own objects are.
BRANDS = """import { getKernel as real } from "./index.js";
export async function getKernel(source, options) {
  const d = options.device;
  const e = d.createCommandEncoder();
  const p = e.beginComputePass();
  const checks = { device: d instanceof GPUDevice, tag: Object.prototype.toString.call(d) === "[object GPUDevice]",
                   queue: d.queue instanceof GPUQueue && d.queue === d.queue, encoder: e instanceof GPUCommandEncoder,
                   pass: p instanceof GPUComputePassEncoder, limits: d.limits instanceof GPUSupportedLimits,
                   features: typeof d.features.has("shader-f16") === "boolean" };
  p.end();
  d.queue.submit([e.finish()]);
  d.label = "handed";
  checks.label = d.label === "handed";
  const failed = Object.keys(checks).filter((k) => !checks[k]);
  if (failed.length) throw new Error(`the handed device is not WebGPU's: ${failed.join(", ")}`);
  return real(source, options);
}
"""


def check(impl, package_name, case_id):
    package, found = _golden(package_name)
    verdict = verdict_for(found[case_id])
    try:
        Checker(impl).check(found[case_id], package, verdict)
    except (CaseFailed, CaseNotApplicable) as err:
        return err, verdict
    return None, verdict


def module(tmp_path, name, text):
    root = planted_loader(tmp_path, "index.js", "export { ContractError", "export { ContractError")
    (root / "src" / name).write_text(text)
    return loader_impl(root / "src" / name)


def test_a_loader_that_computes_on_the_cpu_does_not_conform_in_chromium(tmp_path):
    """Issue 51's loader: every case whose plan dispatches fails, saying nothing was dispatched; what passes is a
    rejection or an empty output, which no column rests a verdict on."""
    impl = module(tmp_path, "cpu.mjs", ON_THE_CPU)
    package, found = _golden("com.microsoft.Gelu")
    checker = Checker(impl)
    failed, passed = {}, []
    for case in found.values():
        if case.heavy:
            continue
        verdict = verdict_for(case)
        try:
            checker.check(case, package, verdict)
            passed.append(verdict)
        except CaseFailed as err:
            failed[case.id] = str(err)
    assert failed and all(NOTHING in text for text in failed.values()), next(iter(failed.values()), "none failed")
    assert "Gelu/f32/X[4,3]/vec4" in failed
    assert not [v.case_id for v in passed if v.evidence == "values"]


@pytest.mark.parametrize("kind", sorted(WRAPPED))
def test_outputs_not_from_a_kernel_on_the_pages_device_fail(tmp_path, kind):
    body, package, case_id, words = WRAPPED[kind]
    own = "{ ...options, device: undefined }" if kind == "own-device" else "options"
    impl = module(tmp_path, f"{kind}.mjs", GETKERNEL.format(own=own, body=body))
    err, _ = check(impl, package, case_id)
    assert isinstance(err, CaseFailed) and words in str(err), err


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_work_other_than_the_plans_fails_naming_it(tmp_path, plant):
    file, edits, words = PLANTS[plant]
    impl = loader_impl(planted(tmp_path, file, edits))
    err, _ = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")
    assert isinstance(err, CaseFailed), err
    assert all(part in str(err) for part in ([words] if isinstance(words, str) else words)), err


def test_a_refused_call_that_dispatched_fails_whatever_stats_says(tmp_path):
    """kernel() runs a call of its own on the page's device, then refuses the case's call; stats() says 0."""
    body = (
        "try { return await k(inputs, opts); } catch (e) { await k({ X: { data: new Float32Array(4), "
        "shape: [4] } }, {}); throw e; }"
    )
    impl = module(tmp_path, "refuses.mjs", GETKERNEL.format(own="options", body=body))
    err, _ = check(impl, "com.microsoft.Gelu", "Gelu/f64/X[4,3]/reject-dtype")
    assert isinstance(err, CaseFailed) and "the call was rejected (dtype) but 1 dispatch(es) ran" in str(err), err


def test_the_reference_loader_conforms_on_what_it_dispatched_through_a_device_webgpu_accepts(tmp_path):
    """The handed device passes WebGPU's brand checks; a case's verdict says what it rested on, and the report's
    device line is the page's adapter."""
    impl = module(tmp_path, "brands.mjs", BRANDS)
    err, verdict = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[4,3]/vec4")
    assert err is None, err
    assert verdict.evidence == "values"
    assert verdict.impl["evidence"].startswith(
        "values of dispatched kernels: 1 dispatch(es) on the page's device "
        "as planned, of the WGSL the package renders, the outputs what they "
        "left in their bindings"
    ), verdict.impl
    assert verdict.impl["dispatched"] == [[1, 1, 1]]
    err, verdict = check(impl, "com.microsoft.Gelu", "Gelu/f32/X[0,3]/scalar")
    assert err is None and verdict.impl["evidence"] == "nothing dispatched, as planned (every pass is empty)"
    line = device_line(impl.describe())
    assert not line.startswith("not reported") and "through Chromium" in line, line
