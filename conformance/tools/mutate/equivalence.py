"""Equivalent mutants that rendering cannot prove: the suite's arguments live in ``equivalent.yaml`` beside this
file; a kernel repository keeps its own in the same format (``mutate --equivalent FILE``).

An entry argues one of two things (its optional ``class``):

* ``equivalent`` (the default): the mutant's outputs are the original's, bit for bit, on every call;
* ``alternative``: the mutant is another correct kernel for the contract (another summation order, another
  formula within the derived tolerance): its outputs differ in rounding, so no case can or should fail it.

Neither counts in the kill rate; the report lists each class with its argument.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from conformance.tools.mutate.mutants import Mutant

ARGUMENTS = Path(__file__).with_name("equivalent.yaml")


#: What an argument may say a mutant is.
CLASSES = ("equivalent", "alternative")


def load_arguments(path: Path = ARGUMENTS) -> dict[tuple[str, str], tuple[str, str]]:
    """(package short name or ``*``, pattern over ``"<id> <description>"``) -> (class, why), in the file's order.
    The shipped file and a kernel repository's own (``mutate --equivalent FILE``) have this one format; a bad
    file is a ``ValueError`` naming it and the entry."""
    try:
        entries = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the equivalence arguments: {exc}") from None
    if not isinstance(entries, list):
        raise ValueError(
            f"{path}: expected a YAML list of {{package, pattern, why}} entries, got {type(entries).__name__}"
        )
    for n, entry in enumerate(entries):
        if (
            not isinstance(entry, dict)
            or not {"package", "pattern", "why"} <= set(entry) <= {"package", "pattern", "why", "class"}
            or not all(isinstance(v, str) for v in entry.values())
        ):
            raise ValueError(
                f"{path}: entry {n} must have exactly the strings package, pattern and why (and "
                f"optionally class): {entry!r}"
            )
        if entry.get("class", "equivalent") not in CLASSES:
            raise ValueError(f"{path}: entry {n}: class {entry['class']!r} is not one of {', '.join(CLASSES)}")
        try:
            re.compile(entry["pattern"])
        except re.error as exc:
            raise ValueError(
                f"{path}: entry {n}: pattern {entry['pattern']!r} is not a regular expression: {exc}"
            ) from None
    return {(entry["package"], entry["pattern"]): (entry.get("class", "equivalent"), entry["why"]) for entry in entries}


#: The arguments of ``equivalent.yaml``: (package short name, id pattern) -> (class, why).
ARGUED_EQUIVALENT: dict[tuple[str, str], tuple[str, str]] = load_arguments()


def argue(short: str, mutants: list[Mutant], arguments: dict[tuple[str, str], tuple[str, str]] | None = None) -> None:
    """Mark each pending mutant of package ``short`` that an argument's pattern matches as its class says
    (equivalent or alternative; first match): ``arguments`` (a kernel repository's own, first) then the shipped
    ones."""
    table = {**(arguments or {}), **ARGUED_EQUIVALENT}
    for m in mutants:
        if m.status != "pending":
            continue
        for (pkg, pattern), (status, why) in table.items():
            if pkg in (short, "*") and re.fullmatch(pattern, f"{m.id} {m.description}", flags=re.S):
                m.status, m.equivalence = status, why
                break
