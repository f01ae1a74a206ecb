"""``--expectations FILE``: known failures as strict xfails, by glob over case ids."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from conformance.errors import ConformanceError
from conformance.files import MAX_YAML_FILE, parse_yaml, read_named


class ExpectationsError(ValueError):
    """The file cannot be read or is not a list of {id, reason}: the message names the file and what was expected."""


@dataclass(frozen=True)
class Expectation:
    """One entry of the file: the glob as written (reports name it), its compiled form, and the reason."""

    glob: str
    pattern: "Glob"
    reason: str

    def covers(self, case_id: str) -> bool:
        return bool(self.pattern.fullmatch(case_id))

    def as_dict(self) -> dict:
        return {"pattern": self.glob, "reason": self.reason}


def load(path) -> list[Expectation]:
    if not path:
        return []
    try:
        data = parse_yaml(read_named(Path(path), MAX_YAML_FILE), f"--expectations {path}")
    except ConformanceError as exc:
        raise ExpectationsError(
            str(exc) if str(exc).startswith("--expectations") else f"--expectations {exc}"
        ) from None
    if data is None:
        return []
    if not isinstance(data, list) or not all(
        isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("reason"), str) for e in data
    ):
        raise ExpectationsError(
            f"--expectations {path}: expected a YAML list of entries with string fields "
            f"'id' (a glob over case ids) and 'reason'"
        )
    return [Expectation(e["id"], id_pattern(e["id"]), e["reason"]) for e in data]


class Glob:
    """A glob over case ids: ``*`` (any run) and ``?`` (any one character) are wildcards, everything else
    (brackets included: ids hold shapes) is literal.

    Matched by the two-pointer wildcard algorithm (back to the last ``*`` only), in at most
    len(pattern) x len(id) steps (``steps`` holds the last match's count): a translated regex backtracked
    catastrophically on runs of ``*?``.
    """

    def __init__(self, glob: str):
        self.glob = re.sub(r"\*+", "*", glob)  # a run of stars is one star
        self.steps = 0

    def fullmatch(self, text: str) -> bool:
        pattern, p, t, star, mark = self.glob, 0, 0, -1, 0
        self.steps = 0
        while t < len(text):
            self.steps += 1
            if p < len(pattern) and pattern[p] == "*":
                star, mark, p = p, t, p + 1
            elif p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
                p, t = p + 1, t + 1
            elif star >= 0:
                p, mark = star + 1, mark + 1
                t = mark
            else:
                return False
        return all(c == "*" for c in pattern[p:])

    def __repr__(self):
        return f"Glob({self.glob!r})"


def id_pattern(glob: str) -> Glob:
    """The compiled glob (see :class:`Glob`)."""
    return Glob(glob)
