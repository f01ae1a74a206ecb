"""``--expectations FILE``: known failures as strict xfails, by glob over case ids."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml


class ExpectationsError(ValueError):
    """The file cannot be read or is not a list of {id, reason}: the message names the file and what was expected."""


@dataclass(frozen=True)
class Expectation:
    """One entry of the file: the glob as written (reports name it), its compiled form, and the reason."""

    glob: str
    pattern: re.Pattern
    reason: str

    def covers(self, case_id: str) -> bool:
        return self.pattern.fullmatch(case_id) is not None

    def as_dict(self) -> dict:
        return {"pattern": self.glob, "reason": self.reason}


def load(path) -> list[Expectation]:
    if not path:
        return []
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ExpectationsError(f"--expectations {path}: cannot read it: {exc}") from None
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str)
                                             and isinstance(e.get("reason"), str) for e in data):
        raise ExpectationsError(f"--expectations {path}: expected a YAML list of entries with string fields "
                                f"'id' (a glob over case ids) and 'reason'")
    return [Expectation(e["id"], id_pattern(e["id"]), e["reason"]) for e in data]


def id_pattern(glob: str) -> re.Pattern:
    """``*`` and ``?`` are wildcards; everything else (brackets included: ids hold shapes) is literal."""
    return re.compile(re.escape(glob).replace(r"\*", ".*").replace(r"\?", "."))
