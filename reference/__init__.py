"""Float64 references, tolerances and comparison for the GELU kernels (see README.md)."""
from .compare import Comparison, WorstElement, compare
from .gelu import gelu_erf, gelu_tanh
from .registry import Reference, ReferenceNotFound, known_ops, reference_for
from .tolerance import Tolerance, UnsupportedDtype, tolerance_for

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
