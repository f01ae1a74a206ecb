"""The mutation report: kill rates per package and overall, and its Markdown (every survivor and argument)."""

from __future__ import annotations

from pathlib import Path

from conformance.certify.report import write_files
from conformance.tools.mutate.mutants import Mutant


def _score(ms: list[Mutant]) -> dict:
    killed = sum(m.status == "killed" for m in ms)
    survived = sum(m.status == "survived" for m in ms)
    return {
        "mutants": len(ms),
        "killed": killed,
        "survived": survived,
        "equivalent": sum(m.status == "equivalent" for m in ms),
        "alternative": sum(m.status == "alternative" for m in ms),
        "kill_rate": killed / (killed + survived) if killed + survived else 1.0,
    }


def summarize(mutants: list[Mutant], baselines: dict, seconds: float, jobs: int) -> dict:
    per_pkg = {
        pkg: _score([m for m in mutants if m.package == pkg]) for pkg in dict.fromkeys(m.package for m in mutants)
    }
    #: per file of a package (each template, and the manifest): killed, equivalent (argued), surviving
    per_file = {
        f"{pkg} {name}": _score([m for m in mutants if (m.package, m.file) == (pkg, name)])
        for pkg, name in dict.fromkeys((m.package, m.file) for m in mutants)
    }
    killed = sum(v["killed"] for v in per_pkg.values())
    survived = sum(v["survived"] for v in per_pkg.values())
    return {
        "kill_rate": killed / (killed + survived) if killed + survived else 1.0,
        "killed": killed,
        "survived": survived,
        "equivalent": sum(v["equivalent"] for v in per_pkg.values()),
        "alternative": sum(v["alternative"] for v in per_pkg.values()),
        "seconds": round(seconds, 1),
        "jobs": jobs,
        "packages": per_pkg,
        "templates": per_file,
        "baselines": baselines,
        "mutants": [m.as_dict() for m in mutants],
    }


def markdown(result: dict) -> str:
    lines = [
        "# Mutation score",
        "",
        f"Kill rate **{100 * result['kill_rate']:.1f}%** over the non-equivalent mutants: {result['killed']} "
        f"killed, {result['survived']} surviving, {result['equivalent']} equivalent and "
        f"{result.get('alternative', 0)} alternative correct kernels (argued below); "
        f"{result['seconds']:.0f} s with {result['jobs']} runs at a time, each stopped at its first failing case.",
        "",
        "| package | mutants | killed | surviving | equivalent | alternative | kill rate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pkg, v in result["packages"].items():
        lines.append(
            f"| {pkg} | {v['mutants']} | {v['killed']} | {v['survived']} | {v['equivalent']} | "
            f"{v.get('alternative', 0)} | {100 * v['kill_rate']:.1f}% |"
        )
    lines += [
        "",
        "| package and file | mutants | killed | surviving | equivalent | alternative | kill rate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {name} | {v['mutants']} | {v['killed']} | {v['survived']} | {v['equivalent']} | "
        f"{v.get('alternative', 0)} | {100 * v['kill_rate']:.1f}% |"
        for name, v in result.get("templates", {}).items()
    ]
    survivors = [m for m in result["mutants"] if m["status"] == "survived"]
    lines += ["", "## Surviving mutants", ""]
    lines += [f"- `{m['id']}`: {m['description']}" for m in survivors] or ["None."]
    lines += ["", "## Equivalent mutants (argued)", ""]
    lines += [
        f"- `{m['id']}`: {m['description']}. **Why equivalent:** {m['equivalence']}"
        for m in result["mutants"]
        if m["status"] == "equivalent"
    ] or ["None."]
    lines += ["", "## Alternative correct kernels (argued)", ""]
    lines += [
        f"- `{m['id']}`: {m['description']}. **Why another correct kernel:** {m['equivalence']}"
        for m in result["mutants"]
        if m["status"] == "alternative"
    ] or ["None."]
    lines += ["", "## Killed mutants", "", "| mutant | what | killed by |", "| --- | --- | --- |"]
    lines += [
        f"| `{m['id']}` | {m['description'].replace('|', '/')} | `{m['killed_by']}` |"
        for m in result["mutants"]
        if m["status"] == "killed"
    ]
    return "\n".join(lines) + "\n"


def write(result: dict, out: Path) -> tuple[Path, Path]:
    """The report as JSON at ``out`` (its suffix made ``.json``) and as Markdown beside it."""
    out = Path(out)
    return write_files(out if out.suffix == ".json" else out.with_suffix(".json"), result, markdown(result))
