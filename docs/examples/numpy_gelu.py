"""numpy-gelu: a complete implementation of com.microsoft.Gelu for the conformance suite (NumPy, float64 inside)."""

import numpy as np
from scipy.special import erf

from conformance.certify.implementations import ImplResult, NotSupported, Rejected


class NumpyGelu:
    name = "numpy-gelu"
    has_variants = False  # it reports no variant or dispatch: those assertions are "not applicable"

    def available(self) -> str | None:
        return None  # usable on any machine (a string here is one error up front: the run checks nothing)

    def prepare(self, package) -> None:
        if package.name != "com.microsoft.Gelu":  # other packages' cases are skipped with this reason
            raise NotSupported(f"numpy-gelu implements com.microsoft.Gelu only, not {package.name}")

    def run(self, case, inputs) -> ImplResult:
        x = inputs.get("X")  # case.inputs["X"] is its (shape, dtype name); inputs["X"] the NumPy array itself
        if x is None:
            raise Rejected("X is required", argument="X")
        if x.dtype not in (np.float16, np.float32):
            raise Rejected(f"X: {x.dtype} is neither float16 nor float32", argument="X")
        z = x.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):  # inf and nan inputs give inf and nan, as specified
            y = 0.5 * z * (1.0 + erf(z / np.sqrt(2.0)))
        return ImplResult({"Y": y.astype(x.dtype)})
