"""The Markdown report: full failures, an honest header for implementations outside the device model, every status."""

from conformance.certify import report

VALUE_FAILURE = (
    "Gelu/f32/X[5]/vec4: output Y differs from the reference:\n"
    "FAILED: 1 of 5 checked elements out of tolerance (20%); worst error = 1.49e+05 x allowed\n"
    "  worst elements (largest err/allowed first):\n"
    "  index   input   expected   actual   err/allowed\n"
    "   (4,)    1.13      0.989        0      1.49e+05"
)


def verdict(case_id, status, detail="", variant="vec4", dtype="float32"):
    return {
        "id": case_id,
        "package": "com.microsoft.Gelu",
        "variant": variant,
        "dtype": dtype,
        "family": "f",
        "status": status,
        "worst_ratio": None,
        "detail": detail,
    }


def build(verdicts, device):
    return report.build(
        verdicts, identity=[], device=device, implementation="numpy-gelu", skipped_reasons={}, deselected_heavy=0
    )


def test_markdown_shows_whole_failures_outside_header_and_not_applicable_column():
    verdicts = [
        verdict("Gelu/f32/X[5]/vec4", "failed", VALUE_FAILURE),
        verdict("Gelu/f32/X[8]/vec4", "passed"),
        verdict(
            "Gelu/f16/X[2]/reject@no-f16",
            "not-applicable",
            "only under profile 'no-f16'",
            variant="rejected",
            dtype="float16",
        ),
    ]
    device = {"implementation": "numpy-gelu", "provider": None, "available": None}
    data = build(verdicts, device)
    md = report.markdown(data)
    assert data["result"] == "does-not-conform"
    assert "(?, )" not in md and "Device: not reported: numpy-gelu runs outside the suite's device model" in md
    for line in VALUE_FAILURE.splitlines():  # every line of the value failure, the worst elements included
        assert f"  {line}" in md
    header = next(line for line in md.splitlines() if line.startswith("| package |"))
    assert "| not applicable |" in header
    assert "| com.microsoft.Gelu | rejected | float16 | 0 | 0 | 0 | 0 | 1 |" in md


def test_device_line_names_what_was_reported():
    assert (
        report.device_line({"adapter": "llvmpipe", "type": "CPU", "backend": "Vulkan", "driver": "Mesa"})
        == "llvmpipe (CPU, Vulkan, driver Mesa)"
    )
    assert report.device_line({"adapter": "x", "backend": "?", "driver": ""}) == "x"
    assert "provider CPUExecutionProvider" in report.device_line(
        {"implementation": "onnxruntime-cpu", "provider": "CPUExecutionProvider", "available": None}
    )
    assert report.device_line(None) == "none reported (no case ran)"
