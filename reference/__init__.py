"""Float64 references, tolerances and comparison for the kernels under specs/ (see README.md)."""
from reference.add import add
from reference.compare import Comparison, WorstElement, compare
from reference.gelu import gelu_erf, gelu_tanh
from reference.layernorm import layer_normalization
from reference.registry import Reference, ReferenceNotFound, known_ops, reference_for
from reference.rowwise import ElementTolerance
from reference.softmax import softmax
from reference.tolerance import Tolerance, UnsupportedDtype, tolerance_for

__all__ = [
    "Comparison",
    "ElementTolerance",
    "Reference",
    "ReferenceNotFound",
    "Tolerance",
    "UnsupportedDtype",
    "WorstElement",
    "add",
    "compare",
    "gelu_erf",
    "gelu_tanh",
    "known_ops",
    "layer_normalization",
    "reference_for",
    "softmax",
    "tolerance_for",
]
