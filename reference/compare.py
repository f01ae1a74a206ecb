"""Compare a kernel output with a reference output under a Tolerance.

Expected NaN means "unconstrained" (see README.md) and is skipped. Any other
element must satisfy |actual - expected| <= tolerance.allowed(expected); a NaN or
Inf in `actual` therefore fails. -0 and +0 are equal. Shape and dtype problems
are reported as a failed Comparison, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference.tolerance import Tolerance


@dataclass(frozen=True)
class WorstElement:
    index: tuple[int, ...]
    input: float | None
    expected: float
    actual: float
    abs_err: float
    rel_err: float
    ulp_err: float
    allowed: float

    @property
    def ratio(self) -> float:
        return _ratio(np.float64(self.abs_err), np.float64(self.allowed)).item()


@dataclass(frozen=True)
class Comparison:
    passed: bool
    checked: int
    mismatches: int
    mismatch_fraction: float
    worst: tuple[WorstElement, ...]
    worst_ratio: float
    tolerance: Tolerance
    unconstrained: int = 0
    error: str | None = None  # shape/dtype problem; nothing was compared
    unconstrained_as: str = "non-finite inputs"  # why elements are unconstrained, in the op's words
    #: err/allowed over the output in element order, at most PROFILE_BUCKETS values (each its bucket's largest;
    #: None where a bucket holds a non-finite error, -1.0 where it holds only unconstrained elements): a picture
    #: of where the output goes wrong
    profile: tuple = ()
    #: per bucket of ``profile``: the share of its constrained elements out of tolerance (a bar is its bucket's
    #: largest error: one bad element makes it tall; this says how many are bad)
    profile_failing: tuple = ()
    #: err/allowed against the input value (when the output has its first input's shape): ``{"range": [lo, hi],
    #: "worst": [...], "failing": [...], "count": [...]}`` over INPUT_BINS equal bins of [lo, hi]
    by_input: dict | None = None

    def error_profile(self, role: str, shape) -> dict:
        """What a report keeps of a failed comparison to draw it: over the output, and against the input."""
        return {
            "role": role,
            "shape": list(shape),
            "profile": list(self.profile),
            "failing": list(self.profile_failing),
            "checked": self.checked,
            "mismatches": self.mismatches,
            **({"by_input": self.by_input} if self.by_input else {}),
        }

    def message(self) -> str:
        head = tolerance_text(self.tolerance)
        if self.error:
            return f"FAILED: {self.error}\n  tolerance {head}"
        verdict = "passed" if self.passed else "FAILED"
        lines = [
            f"{verdict}: {self.mismatches} of {self.checked} checked elements out of tolerance "
            f"({100 * self.mismatch_fraction:.3g}%), {self.unconstrained} unconstrained ({self.unconstrained_as}); "
            f"worst error = {self.worst_ratio:.3g} x allowed",
            f"  tolerance {head}",
        ]
        if self.worst:
            cols = ("index", "input", "expected", "actual", "abs_err", "rel_err", "ulp_err", "allowed", "err/allowed")
            rows = [
                (
                    str(w.index),
                    "-" if w.input is None else f"{w.input:.9g}",
                    f"{w.expected:.9g}",
                    f"{w.actual:.9g}",
                    f"{w.abs_err:.3g}",
                    f"{w.rel_err:.3g}",
                    f"{w.ulp_err:.3g}",
                    f"{w.allowed:.3g}",
                    f"{w.ratio:.3g}",
                )
                for w in self.worst
            ]
            widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
            fmt = "  " + "  ".join(f"{{:>{w}}}" for w in widths)
            lines += ["  worst elements (largest err/allowed first):", fmt.format(*cols)]
            lines += [fmt.format(*r) for r in rows]
        return "\n".join(lines)


def tolerance_text(tol: Tolerance) -> str:
    """The bound as a message states it: one atol for every element, or (an ElementTolerance) its per-element
    range, never the largest as if it applied everywhere."""
    element = getattr(tol, "element_atol", None)
    if element is None:
        return f"{tol.dtype}: |actual - expected| <= {tol.atol:.3g} + {tol.rtol:.3g}*|expected| ({tol.reason})"
    finite = np.asarray(element, dtype=np.float64).reshape(-1)
    span = f"from {finite.min():.3g} to {finite.max():.3g}" if finite.size else "none"
    return (
        f"{tol.dtype}: |actual - expected| <= atol[i] + {tol.rtol:.3g}*|expected|, atol[i] per element "
        f"({span}; each element's own is in the 'allowed' column) ({tol.reason})"
    )


def _ratio(abs_err: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(allowed > 0, abs_err / allowed, np.where(abs_err > 0, np.inf, 0.0))
    return np.where(np.isnan(abs_err), np.inf, r)


def ulp(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """One ULP of `dtype` at each value (float64 in, float64 out)."""
    info = np.finfo(dtype)
    mag = np.minimum(np.abs(values), float(info.max))
    _, exp = np.frexp(np.where(np.isfinite(mag), mag, 0.0))  # mag = m * 2**exp, m in [0.5, 1)
    spacing = np.ldexp(1.0, exp - 1 - info.nmant)
    return np.where(mag < float(info.tiny), float(info.smallest_subnormal), spacing)


def _largest(flat: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` largest values, largest first, equal values by index: what a stable argsort of
    ``-flat`` starts with, found by a partition instead of sorting millions of elements."""
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    if k >= flat.size or np.isnan(flat).any():
        return np.argsort(-flat, kind="stable")[:k]
    threshold = np.partition(flat, flat.size - k)[flat.size - k]  # the k-th largest
    above = np.flatnonzero(flat > threshold)
    candidates = np.concatenate([above, np.flatnonzero(flat == threshold)[: k - above.size]])
    candidates.sort()
    return candidates[np.argsort(-flat[candidates], kind="stable")]


PROFILE_BUCKETS = 96


def _failing_share(bad: np.ndarray, constrained: np.ndarray) -> tuple:
    """Per bucket of the profile (``Comparison.profile``): the share of its constrained elements out of tolerance."""
    flat_bad, flat_ok = bad.reshape(-1).astype(np.int64), constrained.reshape(-1).astype(np.int64)
    if flat_bad.size == 0:
        return ()
    edges = np.linspace(0, flat_bad.size, min(PROFILE_BUCKETS, flat_bad.size) + 1).astype(np.int64)[:-1]
    bad_n, ok_n = np.add.reduceat(flat_bad, edges), np.add.reduceat(flat_ok, edges)
    return tuple(float(b / n) if n else 0.0 for b, n in zip(bad_n, ok_n))


INPUT_BINS = 48


def _by_input(inputs: np.ndarray, ratio: np.ndarray, bad: np.ndarray, constrained: np.ndarray) -> dict | None:
    """err/allowed against the input value: per equal bin of the inputs' range, the largest ratio (None: a
    non-finite error; -1.0: an empty bin), the share out of tolerance and the element count."""
    x = inputs.reshape(-1).astype(np.float64)
    keep = constrained.reshape(-1) & np.isfinite(x)
    if int(keep.sum()) < 2 or x[keep].min() == x[keep].max():
        return None
    xs, rs, bs = x[keep], ratio.reshape(-1)[keep], bad.reshape(-1)[keep]
    lo, hi = float(xs.min()), float(xs.max())
    index = np.clip(((xs - lo) / (hi - lo) * INPUT_BINS).astype(np.int64), 0, INPUT_BINS - 1)
    worst = np.full(INPUT_BINS, -1.0)
    np.maximum.at(worst, index, rs)
    count = np.bincount(index, minlength=INPUT_BINS)
    failing = np.bincount(index, weights=bs.astype(np.float64), minlength=INPUT_BINS)
    return {
        "range": [lo, hi],
        "worst": [None if not np.isfinite(v) else float(v) for v in worst],
        "failing": [float(f / n) if n else 0.0 for f, n in zip(failing, count)],
        "count": [int(n) for n in count],
    }


def _failed(tolerance: Tolerance, error: str) -> Comparison:
    return Comparison(False, 0, 0, 0.0, (), 0.0, tolerance, error=error)


#: Outputs of more elements than this are compared a block at a time: every number of the comparison is per
#: element, or a count, maximum or k largest over them, so the blocks give the same ones, without a dozen float64
#: temporaries the size of the whole output (64 Mi elements: seconds in fresh memory alone).
COMPARE_BLOCK = 1 << 18


def compare(
    actual,
    expected,
    tolerance: Tolerance,
    *,
    inputs=None,
    max_report: int = 5,
    unconstrained_as: str = "non-finite inputs",
) -> Comparison:
    actual, expected = np.asarray(actual), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        return _failed(tolerance, f"shape mismatch: actual {actual.shape}, expected {expected.shape}")
    if actual.dtype.name != tolerance.dtype:
        return _failed(tolerance, f"dtype mismatch: actual {actual.dtype.name}, expected {tolerance.dtype}")
    if inputs is not None:
        inputs = np.asarray(inputs)
        if inputs.shape != expected.shape:
            return _failed(tolerance, f"inputs shape {inputs.shape} differs from output shape {expected.shape}")

    allowed = tolerance.allowed(expected).reshape(-1)
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    size = flat_expected.size
    edges = np.linspace(0, size, min(PROFILE_BUCKETS, size) + 1).astype(np.int64)
    peaks = np.full(edges.size - 1, -np.inf)
    checked = mismatches = 0
    found: list[np.ndarray] = []  # per block, its largest ratios' indices (of the whole output)
    ratios: list[np.ndarray] = []
    for start in range(0, size, COMPARE_BLOCK):
        stop = min(size, start + COMPARE_BLOCK)
        a, e = flat_actual[start:stop].astype(np.float64), flat_expected[start:stop]
        _, ratio, bad, constrained = _errors(a, e, allowed[start:stop])
        checked, mismatches = checked + int(constrained.sum()), mismatches + int(bad.sum())
        order = _largest(ratio, min(max_report, ratio.size))
        found.append(order + start)
        ratios.append(ratio[order])
        # the profile's buckets that overlap this block: the largest ratio of each overlap
        first, last = np.searchsorted(edges, start, "right") - 1, np.searchsorted(edges, stop, "left")
        cuts = np.clip(edges[first:last], start, stop) - start
        np.maximum.at(peaks, np.arange(first, first + cuts.size), np.maximum.reduceat(ratio, cuts))
    candidates = np.concatenate(found) if found else np.zeros(0, dtype=np.intp)
    # equal ratios keep index order: the blocks are in index order, and each block's in index order among equals
    order = candidates[_largest(np.concatenate(ratios), min(max_report, checked))] if checked else candidates[:0]
    failing = by_input = None
    if mismatches:  # a failed comparison's pictures, over the whole output
        _, ratio, bad, constrained = _errors(flat_actual.astype(np.float64), flat_expected, allowed)
        failing = _failing_share(bad, constrained)
        by_input = _by_input(inputs, ratio, bad, constrained) if inputs is not None else None
    return Comparison(
        passed=mismatches == 0,
        checked=checked,
        mismatches=mismatches,
        mismatch_fraction=mismatches / checked if checked else 0.0,
        worst=_worst(order, flat_actual, flat_expected, allowed, inputs, expected.shape),
        worst_ratio=float(peaks.max()) if checked else 0.0,
        tolerance=tolerance,
        unconstrained=int(size - checked),
        unconstrained_as=unconstrained_as,
        profile=tuple(None if not np.isfinite(v) else float(v) for v in peaks) if size else (),
        profile_failing=failing or (),
        by_input=by_input,
    )


def _errors(a: np.ndarray, e: np.ndarray, allowed: np.ndarray):
    """(absolute error, err/allowed with -1 where unconstrained, out of tolerance, constrained) per element."""
    constrained = ~np.isnan(e)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_err = np.abs(a - e)  # NaN/Inf in actual -> NaN/Inf error
        abs_err = np.where(np.isfinite(a), abs_err, np.inf)
    ratio = np.where(constrained, _ratio(abs_err, allowed), -1.0)
    return abs_err, ratio, constrained & ~(abs_err <= allowed), constrained


def _worst(order: np.ndarray, flat_actual, flat_expected, allowed, inputs, shape) -> tuple[WorstElement, ...]:
    """The reported elements, with their relative and ULP errors (computed for these only)."""
    a, e, bound = flat_actual[order].astype(np.float64), flat_expected[order], allowed[order]
    err, _, _, _ = _errors(a, e, bound)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        rel_err = np.where(e != 0, err / np.abs(e), np.where(err > 0, np.inf, 0.0))
    ulps = ulp(e, flat_actual.dtype)
    flat_inputs = None if inputs is None else inputs.reshape(-1)
    return tuple(
        WorstElement(
            index=tuple(int(i) for i in np.unravel_index(k, shape)),
            input=None if flat_inputs is None else float(flat_inputs[k]),
            expected=float(e[j]),
            actual=float(a[j]),
            abs_err=float(err[j]),
            rel_err=float(rel_err[j]),
            ulp_err=float(err[j] / ulps[j]),
            allowed=float(bound[j]),
        )
        for j, k in enumerate(order)
    )
