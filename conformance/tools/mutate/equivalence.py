"""Equivalent mutants that rendering cannot prove: the suite's arguments live in ``equivalent.yaml`` beside this
file; a kernel repository keeps its own in the same format (``mutate --equivalent FILE``)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from conformance.tools.mutate.mutants import Mutant

ARGUMENTS = Path(__file__).with_name("equivalent.yaml")


def load_arguments(path: Path = ARGUMENTS) -> dict[tuple[str, str], str]:
    """(package short name or ``*``, pattern over ``"<id> <description>"``) -> why, in the file's order. The
    shipped file and a kernel repository's own (``mutate --equivalent FILE``) have this one format; a bad file is a
    ``ValueError`` naming it and the entry."""
    try:
        entries = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the equivalence arguments: {exc}") from None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a YAML list of {{package, pattern, why}} entries, got "
                         f"{type(entries).__name__}")
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"package", "pattern", "why"} \
                or not all(isinstance(v, str) for v in entry.values()):
            raise ValueError(f"{path}: entry {n} must have exactly the strings package, pattern and why: {entry!r}")
        try:
            re.compile(entry["pattern"])
        except re.error as exc:
            raise ValueError(f"{path}: entry {n}: pattern {entry['pattern']!r} is not a regular expression: "
                             f"{exc}") from None
    return {(entry["package"], entry["pattern"]): entry["why"] for entry in entries}


#: The arguments of ``equivalent.yaml``: (package short name, id pattern) -> why.
ARGUED_EQUIVALENT: dict[tuple[str, str], str] = load_arguments()


def argue(short: str, mutants: list[Mutant], arguments: dict[tuple[str, str], str] | None = None) -> None:
    """Mark each pending mutant of package ``short`` that an argument's pattern matches as equivalent (first match):
    ``arguments`` (a kernel repository's own, first) then the shipped ones."""
    table = {**(arguments or {}), **ARGUED_EQUIVALENT}
    for m in mutants:
        if m.status != "pending":
            continue
        for (pkg, pattern), why in table.items():
            if pkg in (short, "*") and re.fullmatch(pattern, f"{m.id} {m.description}", flags=re.S):
                m.status, m.equivalence = "equivalent", why
                break
