"""Where a row op's extreme values go: into every lane, invocation and iteration of its reduction, from the plan.

A reduction whose wrong answer is harmless on typical data (Softmax is invariant to the subtracted maximum; a
mean that drops a few N(0, 1) terms moves little) shows only when a large value sits in exactly the lane,
invocation or loop iteration the bug drops. The plan says how a row is spread over the workgroup: a binding
element type ``vec4<...>`` is ``width`` 4 lanes (else 1; twice that for a packed binding), the pass's
workgroup size is the invocations, and binding element ``i`` of a row is taken by invocation ``i % workgroup``
in iteration ``i // workgroup`` (the strided layout a workgroup-per-row kernel uses so that neighbouring
invocations read neighbouring elements).
Row ``g`` of a layout's rows puts its maximum in lane ``g % width`` and iteration ``(g // width) % iterations``
of the ``g``-th invocation of :func:`invocation_order` (the last, the first, then every power of two and the
last minus it, then the rest; one that holds that iteration where the last one is partial), and its large
negative in another lane, iteration and invocation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The extremes' magnitude: above exp's f32 overflow argument (88.7), so that a row maximum the reduction misses
#: makes exp(x - m) overflow, and far from the N(0, 1) rest, so that a dropped term moves a mean or a variance.
EXTREME = 100.0
#: Input elements of rows a layout gets beyond those its lanes and iterations need (up to one row per invocation).
ELEMENT_BUDGET = 16384
#: The most cases a layout's rows are split into (each at most MAX_CASE_ELEMENTS elements, so it ships in test.json).
MAX_CASES = 4


@dataclass(frozen=True)
class RowLayout:
    """How one row of ``cols`` elements is spread over a workgroup."""

    cols: int
    width: int  # lanes per binding element (4 for a vec4 binding)
    workgroup: int  # invocations per row

    @property
    def items(self) -> int:
        return self.cols // self.width

    @property
    def active(self) -> int:
        """Invocations that hold at least one binding element of the row."""
        return min(self.workgroup, self.items)

    @property
    def iterations(self) -> int:
        return math.ceil(self.items / self.workgroup) if self.items else 0

    def iterations_of(self, invocation: int) -> int:
        return len(range(invocation, self.items, self.workgroup))

    def position(self, invocation: int, iteration: int, lane: int) -> int:
        """The flat position in the row of ``lane`` of the element ``invocation`` takes in ``iteration``."""
        return (invocation + iteration * self.workgroup) * self.width + lane


def layout_of(plan, role: str, cols: int) -> RowLayout | None:
    """The layout of the first pass binding ``role`` (None where none does or the row is empty)."""
    for p in plan.passes:
        for b in p.bindings:
            if b.arg == role and b.element_type:
                width = (4 if b.element_type.startswith("vec4") else 1) * (2 if b.packing else 1)
                if cols and cols % width == 0:
                    return RowLayout(cols, width, p.dispatch.workgroup_size)
    return None


def invocation_order(active: int) -> list[int]:
    """Every invocation below ``active``: the last, the first, then each power of two and the last minus it (the
    partners of every tree step), then the rest in order."""
    last = active - 1
    key = [last, 0]
    bit = 1
    while bit < active:
        key += [bit, last - bit]
        bit *= 2
    return list(dict.fromkeys([i for i in key if 0 <= i < active] + list(range(active))))


def row_count(layout: RowLayout) -> int:
    """Rows for a layout: one per lane and iteration at least, one per invocation as far as the budget allows."""
    need = layout.width * layout.iterations
    return max(need, min(layout.active, ELEMENT_BUDGET // max(1, layout.cols)))


def extreme_positions(layout: RowLayout, rows: int) -> list[tuple[int, int]]:
    """Per row: (position of the maximum, position of the large negative)."""
    order = invocation_order(layout.active)
    out = []
    for g in range(rows):
        out.append((_slot(layout, order, g, g), _slot(layout, order, g + len(order) // 2 + 1, g + 2)))
    return out


def _slot(layout: RowLayout, order: list[int], g_invocation: int, g: int) -> int:
    """Lane ``g % width`` of iteration ``(g // width) % iterations``, taken by the ``g_invocation``-th invocation of
    ``order``, or, where that one has no such iteration (a partial last one), by the one that many slots earlier."""
    invocation = order[g_invocation % len(order)]
    lane = g % layout.width
    iteration = (g // layout.width) % layout.iterations
    if iteration >= layout.iterations_of(invocation):
        invocation %= layout.items - iteration * layout.workgroup
    return layout.position(invocation, iteration, lane)


def coverage(layout: RowLayout) -> tuple[float, int]:
    """How much of a layout its rows reach: the share of invocations holding an extreme, then lanes x iterations."""
    return min(layout.active, row_count(layout)) / max(1, layout.active), layout.width * layout.iterations


def split_rows(layout: RowLayout, rows: int, max_elements: int) -> list[range]:
    """The rows as consecutive groups, one case each: at most ``max_elements`` per case where that makes at most
    MAX_CASES cases and a case holds two rows or more; else one case of them all (too long to ship anyway)."""
    per_case = max_elements // max(1, layout.cols)
    if per_case < 2 or math.ceil(rows / per_case) > MAX_CASES:
        per_case = rows
    return [range(start, min(rows, start + per_case)) for start in range(0, rows, per_case)]
