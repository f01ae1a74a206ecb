"""Float64 references, tolerances and comparison for the kernels under specs/ (see README.md)."""

from reference.add import add
from reference.compare import Comparison, WorstElement, compare
from reference.gelu import gelu_erf, gelu_tanh
from reference.layernorm import layer_normalization
from reference.registry import Reference, ReferenceNotFound, known_ops, reference_for
from reference.rowwise import (
    FLT_MAX,
    TINY32,
    ElementTolerance,
    RowReference,
    depth,
    float_array,
    output_terms,
    subnormal_part,
)
from reference.softmax import softmax
from reference.tolerance import EPS32, SAFETY, Tolerance, UnsupportedDtype, tolerance_for

#: The error-model building blocks of the shipped row ops are public for outside records (README.md, "Building
#: blocks for an outside record", gives each one's signature and derivation).
__all__ = [
    "EPS32",
    "FLT_MAX",
    "SAFETY",
    "TINY32",
    "Comparison",
    "ElementTolerance",
    "RowReference",
    "Reference",
    "ReferenceNotFound",
    "Tolerance",
    "UnsupportedDtype",
    "WorstElement",
    "add",
    "compare",
    "depth",
    "float_array",
    "gelu_erf",
    "gelu_tanh",
    "known_ops",
    "layer_normalization",
    "output_terms",
    "reference_for",
    "softmax",
    "subnormal_part",
    "tolerance_for",
]
