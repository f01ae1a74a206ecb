"""Both manifests at full coverage: every variant reached, every feasible condition shown both ways."""

from __future__ import annotations

INFEASIBLE = ("constant", "never", "masked", "shadowed")


def test_every_variant_reached(report):
    assert report.unreachable == [], report.report()


def test_every_feasible_condition_shown_true_and_false(report):
    assert report.complete, report.report()
    assert len(report.covered) == len(report.feasible) > 0


def test_every_gap_says_why_it_is_infeasible(report):
    for gap in report.gaps:
        assert gap.gap.startswith(INFEASIBLE), gap


def test_known_infeasible_conditions_are_explained(report):
    by = {(c.variant, c.condition, c.value): c for c in report.conditions}
    if ("scalar_bias", "true", False) in by:
        assert by[("scalar_bias", "true", False)].gap.startswith("constant")
    for (_variant, cond, value), c in by.items():
        if cond == "numel(shapes.X) == numel(shapes.Y)" and not value:
            assert c.gap.startswith("never false") and "output Y has shape shapes.X" in c.gap


def test_fastgelu_numbers(report, package):
    if report.package != "com.microsoft.FastGelu" or package.version != 1:
        return  # the numbers of version 1's manifest (version 2 adds variants, so conditions)
    assert len(report.conditions) == 140
    assert len(report.covered) == 103
    # the selection hinges on the residue of the last dim separately from numel's
    shown = {(c.variant, c.condition, c.value) for c in report.covered}
    assert ("vec4_bias", "dim(shapes.X, ranks.X - 1) % 4 == 0", False) in shown
    assert ("vec4_no_bias", "numel(shapes.X) % 4 == 0", True) in shown


def test_report_text_lists_families_and_gaps(report):
    text = report.report()
    assert "variants reached" in text and "families:" in text
    assert text.count("infeasible:") == len(report.gaps)
