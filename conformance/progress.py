"""Progress of long work (bench sweeps, mutation runs, heavy cases, browser columns): done / total, failures so
far, what is running and an estimate of the time left.

On a terminal one line is rewritten in place; anywhere else (CI logs, a pipe) plain lines, one each time another
tenth of the work is done, so a log holds at most a dozen lines whatever the machine's speed. The estimate is
shown, never used to decide anything.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """``step(label, failed=False)`` after each unit of ``total``; ``close()`` ends a terminal line. ``echo=False``
    only counts, for a caller that prints :meth:`line` in lines of its own."""

    def __init__(
        self,
        title: str,
        total: int,
        *,
        stream: TextIO | None = None,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        steps: int = 10,
        echo: bool = True,
    ):
        self.title, self.total, self.stream = title, max(total, 0), stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock, self.start, self.steps = clock, clock(), steps
        self.done = self.failed = 0
        self._printed_step = 0
        self._open_line = False
        self.echo = echo

    def line(self, label: str = "") -> str:
        left = ""
        if 0 < self.done < self.total:
            elapsed = self.clock() - self.start
            left = f", ~{_duration(elapsed / self.done * (self.total - self.done))} left"
        failed = f", {self.failed} failed" if self.failed else ""
        percent = 100 * self.done // self.total if self.total else 100
        return f"{self.title}: {self.done}/{self.total} ({percent}%){failed}{left}" + (f": {label}" if label else "")

    def step(self, label: str = "", *, failed: bool = False) -> None:
        self.done += 1
        self.failed += bool(failed)
        if not self.echo:
            return
        if self.tty:
            self.stream.write("\r\x1b[K" + self.line(label)[:160])
            self._open_line = True
            if self.done >= self.total:
                self.close()
        else:
            step = self.steps * self.done // self.total if self.total else self.steps
            if step > self._printed_step:
                self._printed_step = step
                self.stream.write(self.line(label)[:300] + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False
