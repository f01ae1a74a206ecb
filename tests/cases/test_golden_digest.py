"""Golden files are loaded instead of generated only when their digest matches the manifest and the generator."""

import shutil

from cases import generate
from cases.golden import CASES_DIR, digest_path, golden_digest, golden_path, load_matching_golden
from conformance.engine.package import REPO_SPECS, load_package


def test_the_committed_golden_file_loads_and_equals_the_generated_cases():
    package = load_package(REPO_SPECS / "com.microsoft.Gelu@2")
    loaded, why = load_matching_golden(CASES_DIR, package)
    assert why == "" and loaded == generate(package)


def test_a_missing_or_stale_golden_file_is_not_loaded_and_says_why(tmp_path):
    package = load_package(REPO_SPECS / "com.microsoft.Gelu")
    loaded, why = load_matching_golden(tmp_path, package)
    assert loaded is None and "no golden file" in why
    shutil.copy(golden_path(CASES_DIR, package.name), golden_path(tmp_path, package.name))
    loaded, why = load_matching_golden(tmp_path, package)
    assert loaded is None and "no digest file" in why
    digest_path(tmp_path, package.name).write_text("0" * 64 + "\n")
    loaded, why = load_matching_golden(tmp_path, package)
    assert loaded is None and "stale" in why
    digest_path(tmp_path, package.name).write_text(golden_digest(package) + "\n")
    loaded, why = load_matching_golden(tmp_path, package)
    assert loaded is not None and why == ""
