"""Cases derived from kernel manifests: condition analysis (MC/DC), the mission's families, golden files.

Public API (the pytest plugin uses exactly this):
``generate(package) -> list[Case]``, ``load_golden(path)``, ``to_yaml(cases)``,
``data.make_inputs(case)``, ``planning_failures(cases)``, ``coverage(package) -> Coverage``, ``PROFILES``.
"""

import sys
from pathlib import Path

# ``python -m cases`` puts the current directory first on sys.path, where a kernel repository's own
# ``reference/`` or ``conformance/`` folder would shadow this project's package of the name; and this package is
# imported (with all it imports) before its ``__main__`` runs. While ``-m`` locates its module, ``sys.argv[0]``
# is "-m" (the interpreter's documented behaviour): then, as in conformance/__main__.py, only this project's own
# root may stay first. (A checkout's own ``cases/`` is found instead of this one before any of it runs: the
# documented commands use ``python -P``, which never puts the current directory on sys.path.)
if sys.argv[:1] == ["-m"] and sys.path and Path(sys.path[0] or ".").resolve() != Path(__file__).resolve().parents[1]:
    del sys.path[0]

from cases import data  # noqa: E402  (after the sys.path fix above)
from cases.coverage import Coverage, coverage  # noqa: E402
from cases.families import FAMILY_NAMES  # noqa: E402
from cases.generate import PlanningFailure, generate, planning_failures  # noqa: E402
from cases.golden import golden_path, load_golden, to_yaml  # noqa: E402
from cases.model import Case  # noqa: E402
from cases.profiles import PROFILES  # noqa: E402

__all__ = [
    "Case",
    "Coverage",
    "FAMILY_NAMES",
    "PROFILES",
    "PlanningFailure",
    "coverage",
    "data",
    "generate",
    "golden_path",
    "load_golden",
    "planning_failures",
    "to_yaml",
]
