"""Every report field ``merge`` reads, wrong, is one located error (issue 51, item 6).

``merge --html`` draws each failed case's ``error_profile`` (its plots over the output and against the input),
so a report from another machine whose profile holds a string, a 400-digit shape or an empty list of bins ended
in a traceback: the checks of issue 40 covered the case's other fields only. The report here is real (a Gelu
whose kernel writes nothing: every case a value failure with its profile), then edited one field at a time; each
edit must give exit status 2, one error naming the file and the JSON pointer, and no page written.
"""

from __future__ import annotations

import copy

import pytest

from tests.hostile.test_forged_reports import failing_report, merge  # noqa: F401  (a fixture, shared)


class _Missing:
    """The field deleted rather than set."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()

#: (pointer under the first case with a profile against the input, the wrong value, what the error must say)
PROFILE = [
    ("", "worse than allowed", "expected an object or null"),
    ("/profile", "171357.08", "expected a list"),
    ("/profile/3", "big", "expected a finite number or null"),
    ("/profile/3", 10**400, "expected a finite number or null"),
    ("/failing", "all", "expected a list"),
    ("/failing/2", "0.5", "expected a number from 0 to 1"),
    ("/failing/2", 7, "expected a number from 0 to 1"),
    ("/failing", [0.5], "expected a list of 96 numbers from 0 to 1 (one per bar of profile) or none"),
    ("/shape", "[1024]", "expected a list"),
    ("/shape/0", "1024", "expected a whole number from 0 to"),
    ("/shape/0", 10**400, "expected a whole number from 0 to"),
    ("/shape/0", 2.5, "expected a whole number from 0 to"),
    ("/shape", [2**62] * 20, "expected at most 2**63 elements"),
    ("/role", ["Y"], "expected a string or null"),
    ("/checked", "1024", "expected a whole number"),
    ("/checked", -4, "expected a whole number >= 0"),
    ("/mismatches", "959", "expected a whole number"),
    ("/mismatches", 5000, "expected a whole number from 0 to checked (1024)"),
    ("/by_input", [1, 2], "expected an object or null"),
    ("/by_input/worst", [], "expected a non-empty list"),
    ("/by_input/worst", "all", "expected a non-empty list"),
    ("/by_input/worst/0", "tiny", "expected a finite number or null"),
    ("/by_input/range", MISSING, "expected [low, high], two finite numbers with low < high; got nothing"),
    ("/by_input/range", [3.0], "expected [low, high], two finite numbers with low < high"),
    ("/by_input/range", [3.0, -3.0], "expected [low, high], two finite numbers with low < high"),
    ("/by_input/range", ["a", "b"], "expected [low, high], two finite numbers with low < high"),
    ("/by_input/range", [-(10**400), 1], "expected [low, high], two finite numbers with low < high"),
    ("/by_input/count", [1, 2], "expected a list of 48 whole numbers (one per bin of worst) or none"),
    ("/by_input/count/1", "many", "expected a whole number"),
    ("/by_input/failing/0", -0.5, "expected a number from 0 to 1"),
    ("/by_input/failing", [0.0], "expected a list of 48 numbers from 0 to 1 (one per bin of worst) or none"),
]

#: (pointer in the report, the wrong value, what the error must say): the other fields merge reads.
OTHERS = [
    ("/cases/0/worst_ratio", 10**400, "expected a finite number or null"),
    ("/cases/0/compared", -1, "expected a whole number >= 0 or null"),
    ("/cases/0/compared", 2.5, "expected a whole number >= 0 or null"),
    ("/weak/0/package", MISSING, "expected a string; got nothing"),
    ("/weak/0/message", None, "expected a string; got None"),
    ("/columns", [], "expected a non-empty list of column reports"),
    ("/columns", "wgpu-vulkan", "expected a non-empty list of column reports"),
    ("/packages", None, "expected a list of packages; got None"),
    ("/packages/0/files", "sha256", "expected an object or null"),
    ("/packages/0/files/manifest.json", 7, "expected a string"),
    ("/device/features/0", {"name": "shader-f16"}, "expected a string"),
    ("/device/limits/maxBufferSize", "lots", "expected a finite number"),
    ("/device/browser", {"name": "chromium"}, "expected a string or null"),
    ("/device/onnxruntime-web", ["1.20"], "expected a string or null"),
    ("/device/user_agent", 5, "expected a string or null"),
]


def _profiled(report: dict) -> int:
    """The first case whose profile has a picture against the input (every field of a profile, present)."""
    return next(i for i, c in enumerate(report["cases"]) if (c.get("error_profile") or {}).get("by_input"))


def _set(report: dict, pointer: str, value) -> dict:
    out = copy.deepcopy(report)
    *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in pointer.strip("/").split("/")]
    node = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key = int(last) if isinstance(node, list) else last
    if value is MISSING:
        del node[key]
    else:
        node[key] = value
    return out


def _one_located_error(tmp_path, report: dict, pointer: str, named: str) -> None:
    proc, out = merge(tmp_path, report)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [line for line in proc.stderr.splitlines() if line.strip()], proc.stderr
    assert len(errors) == 1 and f"forged.json: {pointer}: {named}" in errors[0], proc.stderr
    assert not any(p.exists() for p in out.values())


@pytest.mark.parametrize("pointer, value, named", PROFILE, ids=[f"{p or '/'}={v!r}"[:40] for p, v, _ in PROFILE])
def test_a_wrong_error_profile_field_is_one_located_error(failing_report, tmp_path, pointer, value, named):
    at = f"/cases/{_profiled(failing_report)}/error_profile{pointer}"
    _one_located_error(tmp_path, _set(failing_report, at, value), at, named)


@pytest.mark.parametrize("pointer, value, named", OTHERS, ids=[f"{p}={v!r}"[:40] for p, v, _ in OTHERS])
def test_every_other_field_merge_reads_is_checked(failing_report, tmp_path, pointer, value, named):
    report = copy.deepcopy(failing_report)
    report["device"].update(browser="chromium", user_agent="Mozilla/5.0")  # fields of a browser column
    report["device"]["onnxruntime-web"] = "1.20.1"
    _one_located_error(tmp_path, _set(report, pointer, value), pointer, named)
