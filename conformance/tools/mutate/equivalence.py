"""Equivalent mutants that rendering cannot prove: the arguments live in ``equivalent.yaml`` beside this file."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from conformance.tools.mutate.mutants import Mutant

ARGUMENTS = Path(__file__).with_name("equivalent.yaml")


def load_arguments(path: Path = ARGUMENTS) -> dict[tuple[str, str], str]:
    """(package short name or ``*``, pattern over ``"<id> <description>"``) -> why, in the file's order."""
    entries = yaml.safe_load(path.read_text())
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"package", "pattern", "why"} \
                or not all(isinstance(v, str) for v in entry.values()):
            raise ValueError(f"{path}: entry {n} must have exactly the strings package, pattern and why: {entry!r}")
        re.compile(entry["pattern"])
    return {(entry["package"], entry["pattern"]): entry["why"] for entry in entries}


#: The arguments of ``equivalent.yaml``: (package short name, id pattern) -> why.
ARGUED_EQUIVALENT: dict[tuple[str, str], str] = load_arguments()


def argue(short: str, mutants: list[Mutant]) -> None:
    """Mark each pending mutant of package ``short`` that an argument's pattern matches as equivalent (first match)."""
    for m in mutants:
        if m.status != "pending":
            continue
        for (pkg, pattern), why in ARGUED_EQUIVALENT.items():
            if pkg in (short, "*") and re.fullmatch(pattern, f"{m.id} {m.description}", flags=re.S):
                m.status, m.equivalence = "equivalent", why
                break
