"""The command that reruns exactly one case, typed where the run was started.

It is this run's own interpreter and options (``-p`` plugins, ``--specs``, ``--impl``, ``--device``,
``--expectations``..., as given), less what selects, schedules or writes files (paths, ``-k``, ``-m``, ``-x``, ``-n``,
reports), plus the case: its module under ``--pyargs``, else its file relative to the invocation directory. pytest
keeps its parser private, so the options are read back through it here, in one place.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

#: Option destinations the rerun leaves out: they select, schedule or write, and the rerun names its one case.
RERUN_DROPS = {
    "keyword",
    "markexpr",
    "exitfirst",
    "maxfail",
    "numprocesses",
    "maxprocesses",
    "dist",
    "tx",
    "looponfail",
    "lf",
    "last_failed",
    "failedfirst",
    "stepwise",
    "stepwise_skip",
    "xmlpath",
    "conformance_report",
    "repro_dir",
    "deselect",
    "collectonly",
    "file_or_dir",
    "newfirst",
    "cacheclear",
    "rerun_as",
}


class RerunCommands:
    """The rerun command of each case of one run; the part before the case is made once per module."""

    def __init__(self, config):
        self.config = config
        self._heads: dict[str, tuple[str, str]] = {}  # module -> (the command before the case, its file)

    def command(self, item) -> str:
        """The command that reruns exactly ``item`` (``--rerun-as PREFIX``: ``PREFIX --case NAME``)."""
        prefix = self.config.getoption("rerun_as", None)
        if prefix:
            return f"{prefix} --case {shlex.quote(item.name)}"
        pyargs = self.config.getoption("pyargs", False)
        module = item.module.__name__ if pyargs else str(item.path)
        if module not in self._heads:  # the same for every case of a module: made once
            params = self.config.invocation_params
            options = rerun_options(list(params.args), option_actions(self.config))
            where = module if pyargs else _relative(item.path, Path(params.dir))
            env = [f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []
            self._heads[module] = (
                " ".join(shlex.quote(w) for w in [*env, sys.executable, "-m", "pytest", *options]),
                where,
            )
        head, where = self._heads[module]
        return f"{head} {shlex.quote(f'{where}::{item.name}')}"


def option_actions(config) -> dict:
    """Option string -> argparse action of this run's command line (pytest keeps its parser private)."""
    parser = getattr(config._parser, "optparser", None)
    if parser is None and hasattr(config._parser, "_getparser"):
        parser = config._parser._getparser()
    return dict(getattr(parser, "_option_string_actions", {}))


def rerun_options(args: list[str], actions: dict) -> list[str]:
    """``args`` less positional arguments (what to collect) and the options of :data:`RERUN_DROPS`."""
    kept, i = [], 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            continue
        name = arg.partition("=")[0]
        action = actions.get(name)
        words = [arg]
        if action is None and not arg.startswith("--") and arg[:2] in actions:
            action = actions[arg[:2]]  # -kEXPR, -n2, -pPLUGIN: the value attached
            if action.nargs == 0:  # -xq: flags run together
                flags = [f"-{c}" for c in arg[1:]]
                kept += [f for f in flags if f not in actions or actions[f].dest not in RERUN_DROPS]
                continue
        elif action is not None and action.nargs != 0 and "=" not in arg and i < len(args):
            words.append(args[i])
            i += 1
        if action is not None and action.dest in RERUN_DROPS:
            continue
        kept += words
    return kept


def _relative(path: Path, start: Path) -> str:
    try:
        return str(path.resolve().relative_to(start.resolve()))
    except ValueError:
        return str(path)
