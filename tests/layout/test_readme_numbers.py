"""The README's case counts are what the golden files hold (``scripts/readme_numbers.py`` prints them)."""

import importlib.util
import re

from tests.docs import manual
from tests.layout.test_imports import ROOT

spec = importlib.util.spec_from_file_location("readme_numbers", ROOT / "scripts" / "readme_numbers.py")
numbers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(numbers)
README = manual()  # the case table lives in docs/manual/packages.md


def test_the_readme_case_table_is_what_the_golden_files_hold():
    table = numbers.case_table(numbers.case_counts())
    assert table in README, (
        f"README.md's case table is out of date; paste what scripts/readme_numbers.py prints:\n{table}"
    )


def test_every_case_total_the_readme_states_is_the_golden_files_total():
    total = sum(n for n, _ in numbers.case_counts().values())
    stated = re.findall(r"\b(\d[\d,]*) cases in\b", README)  # "1,956 cases in 12 s..."
    assert stated and all(int(s.replace(",", "")) == total for s in stated), (stated, total)


def test_the_readme_offers_n_only_where_it_helps_with_the_measured_numbers():
    """``-n 2`` is slower than serial on 2 cores: the README says where ``-n`` pays off, with numbers."""
    usage = re.search(r"## Using it\n\n```sh\n(.*?)```", README, re.S).group(1)
    parallel = [line for line in usage.splitlines() if re.search(r"\s-n \d", line)]
    assert parallel and all("many cores" in line for line in parallel), parallel
    helps = re.search(r"\*\*When `-n` helps\.\*\*(.*?)\n\n", README, re.S).group(1)
    assert re.search(r"serial [\d.]+ s, `-n 2` [\d.]+ s, `-n 8` [\d.]+ s", helps), helps  # many cores
    assert "on 2 cores run serially" in helps and re.search(r"serial [\d.]+ s, `-n 2` [\d.]+ s", helps)
