"""Per-column progress lines of a conformance run (``--conformance-progress``): done / total, failures so far, the
last case and the time left, one line per tenth of each column's cases, through pytest's terminal writer (so they
sit between pytest's own lines on a terminal and in a CI log alike)."""

from __future__ import annotations

import re
from collections import Counter

from conformance.progress import Progress

BROWSERS = ("chromium", "firefox")


class _TerminalStream:
    """What Progress writes, handed to pytest's terminal reporter one line at a time."""

    def __init__(self, reporter):
        self.reporter = reporter

    def write(self, text: str) -> None:
        for line in text.splitlines():
            if line.strip():
                writer = self.reporter._tw  # pytest's TerminalWriter: end a line of its dots first
                if writer.width_of_current_line:
                    writer.line()
                self.reporter.write_line(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def wanted(config) -> bool:
    """``on``; ``auto``: heavy cases selected or a browser column (the runs that take minutes)."""
    mode = config.getoption("conformance_progress")
    if mode != "auto":
        return mode == "on"
    return bool(config.getoption("run_heavy")) or config.getoption("webgpu") in (*BROWSERS, "all")


def column_of(nodeid: str) -> str:
    """The column slug a case's node id ends with (``[<case id>+<slug>]``), or "" for a run of one column."""
    # a slug starts with a letter: "+38" in "epsilon=1e+38" is an exponent, not a column
    found = re.search(r"\+([a-z][a-z0-9._-]*)\]?$", nodeid)
    return found.group(1) if found else ""


class ColumnProgress:
    """One Progress per column, created once the run knows its cases."""

    def __init__(self, reporter, expected_ids, default_name: str):
        totals = Counter(column_of(i) for i in expected_ids)
        stream = _TerminalStream(reporter)
        self.bars = {slug: Progress(f"progress {slug or default_name}", n, stream=stream) for slug, n in totals.items()}

    def step(self, nodeid: str, verdict: dict) -> None:
        bar = self.bars.get(column_of(nodeid))
        if bar is not None:
            bar.step(verdict.get("id", ""), failed=verdict.get("status") in ("failed", "xpassed"))
