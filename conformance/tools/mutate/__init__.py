"""Mutation testing: the suite's fault-detection score (``python -m conformance mutate [PACKAGE...]``).

Makes mutants of each package's shader template and manifest (operator swaps, constants nudged, bounds checks
off by one, the tail guard removed, bias dropped or indexed wrong, erf and tanh swapped, f16/f32 confusion,
variant priorities reordered, ``when`` predicates dropped or negated, derive rules perturbed), and runs the
conformance suite against each in a scratch copy of the package -- in parallel processes, each stopped at its
first failing case.  The scratch copy carries the *original* package's ``test.json`` (see
``python -m conformance export``): the generated cases follow the mutated manifest, so a manifest mutant is
caught by the stored expectations of the published contract (variant, dispatch, outcome, values).

A mutant is *killed* (with the case that killed it) or *survives*.  A template mutant whose rendered shaders are
byte-identical for every call the cases make is *equivalent* by construction (the mutated text is never
rendered for this package); other equivalent mutants are argued in ``equivalent.yaml``.  The report (JSON and
Markdown) gives the kill rate over the non-equivalent mutants and lists every survivor.

Modules: :mod:`.mutants` (making them), :mod:`.equivalence` (the argued ones), :mod:`.runner` (running the suite
against them), :mod:`.report` (the score).
"""

from conformance.tools.mutate.equivalence import ARGUED_EQUIVALENT, argue
from conformance.tools.mutate.mutants import (
    Mutant,
    manifest_mutants,
    mark_unrendered,
    package_mutants,
    template_mutants,
)
from conformance.tools.mutate.report import markdown, summarize, write
from conformance.tools.mutate.runner import mutate_packages, run_mutant, run_suite

__all__ = [
    "ARGUED_EQUIVALENT",
    "Mutant",
    "argue",
    "manifest_mutants",
    "mark_unrendered",
    "markdown",
    "mutate_packages",
    "package_mutants",
    "run_mutant",
    "run_suite",
    "summarize",
    "template_mutants",
    "write",
]
