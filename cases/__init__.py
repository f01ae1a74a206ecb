"""Cases derived from kernel manifests: condition analysis (MC/DC), the mission's families, golden files.

Public API (the pytest plugin uses exactly this):
``generate(package) -> list[Case]``, ``load_golden(path)``, ``to_yaml(cases)``,
``data.make_inputs(case)``, ``coverage(package) -> Coverage``, ``PROFILES``.
"""

from . import data
from .coverage import Coverage, coverage
from .families import FAMILY_NAMES
from .generate import generate
from .golden import golden_path, load_golden, to_yaml
from .model import Case
from .profiles import PROFILES

__all__ = ["Case", "Coverage", "FAMILY_NAMES", "PROFILES", "coverage", "data", "generate", "golden_path",
           "load_golden", "to_yaml"]
