"""Data recipes: how a case's input arrays are drawn, so that they are regenerated bit-exactly, never stored.

Every input is drawn from ``numpy.random.default_rng([seed, input index])`` (normal
with standard deviation ``scale``, uniform on [-scale, scale], or a distribution of the
op's record, ``conformance.ops``, for the roles it names) and cast to its dtype.
``special`` values (kept as text, so NaN compares equal in goldens) then overwrite the
even flat positions of the first input, cycling through the list, so each special value
also has ordinary neighbours in the same vec4; with ``special_rows`` only those of the
first rows of the last axis, so that the other rows of a row op stay checked. ``extremes`` (row ops) then put,
in row r of the last axis, ``+extreme`` at flat position ``extremes[r][0]`` of the row (its maximum, far from its
mean) and ``-extreme`` at ``extremes[r][1]`` (a large negative): positions the case generator derives from the plan
(cases.extremes), so that the values a reduction would drop sit in its lanes, invocations and iterations.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from conformance.ops import record_for

#: The most input elements of a case whose data ships in test.json (conformance.certify.testjson); families
#: that want a case in every stored suite (mutation runs them) stay within it.
MAX_CASE_ELEMENTS = 4096

DISTRIBUTIONS = ("normal", "uniform")

#: Magnitudes where exp/tanh (or x**3 inside them) overflow or saturate, per dtype.
OVERFLOW_MAGNITUDES = {
    "float16": (4.0, 9.0, 11.0, 12.0, 40.0, 100.0),
    "float32": (9.0, 10.0, 20.0, 44.0, 88.0, 89.0, 100.0, 1e4, 1e13, 3e38),
}


@dataclass(frozen=True)
class Recipe:
    seed: int
    dist: str = "normal"
    scale: float = 3.0
    special: tuple[str, ...] = ()
    special_rows: int = 0  # 0: specials anywhere; k: only in the first k rows of the last axis
    extreme: float = 0.0  # the magnitude placed at ``extremes`` (row ops)
    extremes: tuple[tuple[int, int], ...] = ()  # per row: (position of +extreme, position of -extreme)

    def as_dict(self) -> dict:
        out = {"seed": self.seed, "dist": self.dist, "scale": self.scale}
        if self.special:
            out["special"] = list(self.special)
        if self.special_rows:
            out["specialRows"] = self.special_rows
        if self.extremes:
            out["extreme"] = self.extreme
            out["extremes"] = [list(pair) for pair in self.extremes]
        return out

    @staticmethod
    def from_dict(data: dict) -> "Recipe":
        return Recipe(
            int(data["seed"]),
            data["dist"],
            float(data["scale"]),
            tuple(data.get("special", ())),
            int(data.get("specialRows", 0)),
            float(data.get("extreme", 0.0)),
            tuple((int(a), int(b)) for a, b in data.get("extremes", ())),
        )


def seed_for(case_id: str) -> int:
    return int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:4], "little")


def special_values(dtype: str) -> tuple[str, ...]:
    """Signed zeros, subnormals, the smallest normal, overflow magnitudes and the largest finite value."""
    if dtype not in OVERFLOW_MAGNITUDES:
        return ()
    info = np.finfo(dtype)
    tiny_sub = float(info.smallest_subnormal)
    magnitudes = [
        tiny_sub,
        float(info.smallest_normal) - tiny_sub,
        float(info.smallest_normal),
        *OVERFLOW_MAGNITUDES[dtype],
        float(info.max),
    ]
    values = [0.0, -0.0] + [s * float(np.asarray(v, dtype)) for v in magnitudes for s in (1.0, -1.0)]
    return tuple(repr(v) for v in values)


NONFINITE = ("nan", "inf", "-inf", "0.5", "-0.5", "-0.0")


def make_inputs(case) -> dict[str, np.ndarray | None]:
    """The case's input arrays, role -> array (None for an absent input), regenerated from its recipe."""
    recipe: Recipe = case.data
    out: dict[str, np.ndarray | None] = {}
    for index, (role, arg) in enumerate(case.inputs.items()):
        if arg is None:
            out[role] = None
            continue
        shape, dtype = arg
        rng = np.random.default_rng([recipe.seed, index])
        size = math.prod(shape)
        array = _generic(recipe, rng, size, dtype)
        if array is None:
            array = _draw(case, recipe, role, rng, shape, size, dtype).astype(dtype)
        if recipe.special and index == 0 and size:
            specials = np.array([float(v) for v in recipe.special], dtype=np.float64).astype(dtype)
            span = size if not recipe.special_rows or not shape else min(size, recipe.special_rows * shape[-1])
            even = np.arange(0, span, 2)
            array[even] = specials[np.arange(even.size) % specials.size]
        if recipe.extremes and index == 0 and size:
            _place_extremes(array, shape, recipe, case.id)
        out[role] = array.reshape(shape)
    return out


def _place_extremes(flat: np.ndarray, shape, recipe: Recipe, case_id: str) -> None:
    """+extreme and -extreme at each row's two positions (flat: the row-major array of ``shape``)."""
    cols = shape[-1] if shape else 1
    if len(recipe.extremes) > size_rows(shape) or any(not 0 <= p < cols for pair in recipe.extremes for p in pair):
        raise ValueError(
            f"case {case_id}: extremes {list(recipe.extremes)[:4]}... do not fit {len(recipe.extremes)} "
            f"rows of {cols} elements in the shape {list(shape)}"
        )
    for row, (high, low) in enumerate(recipe.extremes):
        flat[row * cols + high] = recipe.extreme
        if low != high:
            flat[row * cols + low] = -recipe.extreme


def size_rows(shape) -> int:
    return math.prod(shape[:-1]) if shape else 1


#: The generic distributions are drawn this many values at a time, straight into the input's dtype: a generator
#: gives the same stream however many values are asked at once, and a heavy input needs no float64 copy of itself.
DRAW_BLOCK = 1 << 18


def _generic(recipe: Recipe, rng, size: int, dtype: str) -> np.ndarray | None:
    """The flat array of a generic distribution (normal, uniform) in ``dtype``; None for an op record's own."""
    if recipe.dist == "normal":

        def draw(n):
            return rng.standard_normal(n) * recipe.scale
    elif recipe.dist == "uniform":

        def draw(n):
            return rng.uniform(-recipe.scale, recipe.scale, n)
    else:
        return None
    out = np.empty(size, dtype=dtype)
    for start in range(0, size, DRAW_BLOCK):
        out[start : start + DRAW_BLOCK] = draw(min(DRAW_BLOCK, size - start))
    return out


def _draw(case, recipe: Recipe, role: str, rng, shape, size: int, dtype: str) -> np.ndarray:
    """Flat float64 draws of an op record's distribution (its roles; the others normal(0, 1))."""
    op = record_for(case.package)
    found = op.recipe(recipe.dist)
    if found is None:
        names = list(DISTRIBUTIONS) + [r.name for r in op.data]
        raise ValueError(f"case {case.id}: unknown distribution {recipe.dist!r}; expected one of {names}")
    if role not in found.roles:
        return rng.standard_normal(size)
    return np.asarray(found.draw(rng, tuple(shape), dtype, recipe.scale), dtype=np.float64).reshape(size)
