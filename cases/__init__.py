"""Cases derived from kernel manifests: condition analysis (MC/DC), the mission's families, golden files.

Public API (the pytest plugin uses exactly this):
``generate(package) -> list[Case]``, ``load_golden(path)``, ``to_yaml(cases)``,
``data.make_inputs(case)``, ``planning_failures(cases)``, ``coverage(package) -> Coverage``, ``PROFILES``.
"""

from cases import data
from cases.coverage import Coverage, coverage
from cases.families import FAMILY_NAMES
from cases.generate import PlanningFailure, generate, planning_failures
from cases.golden import golden_path, load_golden, to_yaml
from cases.model import Case
from cases.profiles import PROFILES

__all__ = ["Case", "Coverage", "FAMILY_NAMES", "PROFILES", "PlanningFailure", "coverage", "data", "generate",
           "golden_path", "load_golden", "planning_failures", "to_yaml"]
