"""An edited template is compiled anew in a long-lived process (issue 11, item 5): the pipeline cache is keyed
by the rendered WGSL, and a cached render is used only while every template it came from is unchanged."""

from __future__ import annotations

from conformance import BASELINE
from conformance.engine.call import make_call
from conformance.engine.package import load_package
from conformance.engine.planner import Planner
from conformance.gpu.runtime import Runtime
from tests.hostile.conftest import TEMPLATE

GELU = "com.microsoft.Gelu"


def test_an_edited_template_and_include_are_recompiled_not_served_from_the_cache(make_specs, device):
    specs = make_specs(**{GELU: GELU})
    package = load_package(specs / GELU)
    runtime = Runtime(device, package)
    plan = Planner(package.manifest).plan(make_call(package.manifest, {"X": ((8,), "float32")}, BASELINE, None))
    first = runtime.pipeline(plan, plan.passes[0])
    template = specs / GELU / TEMPLATE
    template.write_text("// edited: first\n" + template.read_text())
    second = runtime.pipeline(plan, plan.passes[0])
    assert "// edited: first" in second[2] and second[0] is not first[0]
    # an include edited: the render that used it is stale too
    (specs / GELU / "header.wgsl.jinja").write_text("// header v1\n")
    template.write_text(template.read_text().replace("// edited: first\n", "{% include 'header.wgsl.jinja' %}"))
    assert "// header v1" in runtime.pipeline(plan, plan.passes[0])[2]
    (specs / GELU / "header.wgsl.jinja").write_text("// header v2\n")
    assert "// header v2" in runtime.pipeline(plan, plan.passes[0])[2]
    # unchanged files: the same compiled pipeline (no recompilation)
    compiled = device.compilations
    assert runtime.pipeline(plan, plan.passes[0])[0] is runtime.pipeline(plan, plan.passes[0])[0]
    assert device.compilations == compiled


def test_an_edit_that_keeps_size_and_timestamps_is_still_seen(make_specs, device):
    """Two writes of the same size within one timestamp tick leave the file's status as it was: a template
    changed that recently is read again on every ask, not trusted to its status."""
    import os

    specs = make_specs(**{GELU: GELU})
    package = load_package(specs / GELU)
    runtime = Runtime(device, package)
    plan = Planner(package.manifest).plan(make_call(package.manifest, {"X": ((8,), "float32")}, BASELINE, None))
    template = specs / GELU / TEMPLATE
    text = template.read_text()
    template.write_text("// one\n" + text)
    st = os.stat(template)
    assert "// one" in runtime.pipeline(plan, plan.passes[0])[2]
    template.write_text("// two\n" + text)
    os.utime(template, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same size and modification time
    assert "// two" in runtime.pipeline(plan, plan.passes[0])[2]
