"""The conformance report's template coverage: per template of the packages under test, which branches their
golden cases render (``conformance.shader.branches``, pooled over packages sharing a template), and a
``dead-template-branch`` weakness flag for each branch none renders."""

from __future__ import annotations

from cases.weakness import dead_branches
from conformance.shader.branches import pooled, template_coverage


def report_templates(packages_with_cases) -> tuple[list[dict], list[dict]]:
    """``[(package, cases)]`` -> (the report's ``template_coverage`` entries, the weakness flags
    ``{package, kind, message}`` of dead branches). A template that fails to render is said in its entry."""
    coverages = pooled([t for package, found in packages_with_cases for t in template_coverage(package, found)])
    flags = [w.as_dict(c.package) for c in coverages for w in dead_branches([c])]
    return [c.as_dict() for c in coverages], flags
