"""Float64 references, tolerances and comparison for the kernels under specs/ (see README.md)."""
from .add import add
from .compare import Comparison, WorstElement, compare
from .gelu import gelu_erf, gelu_tanh
from .layernorm import layer_normalization
from .rowwise import ElementTolerance
from .softmax import softmax
from .registry import Reference, ReferenceNotFound, known_ops, reference_for
from .tolerance import Tolerance, UnsupportedDtype, tolerance_for

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
