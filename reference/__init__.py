"""Float64 references, tolerances and comparison for the GELU kernels (see README.md)."""
from reference.compare import Comparison, WorstElement, compare
from reference.gelu import gelu_erf, gelu_tanh
from reference.registry import Reference, ReferenceNotFound, known_ops, reference_for
from reference.tolerance import Tolerance, UnsupportedDtype, tolerance_for

__all__ = [
    "Comparison",
    "Reference",
    "ReferenceNotFound",
    "Tolerance",
    "UnsupportedDtype",
    "WorstElement",
    "compare",
    "gelu_erf",
    "gelu_tanh",
    "known_ops",
    "reference_for",
    "tolerance_for",
]
