"""Malformed manifests on the command line: a clear error naming file and pointer, never a Python traceback."""

from __future__ import annotations

import json

import pytest

from tests.hostile.conftest import run_cli, run_conformance, seed

GOOD = "com.microsoft.Gelu"


def _write(root, name, text: str | bytes):
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "manifest.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    return pkg


def _variant(mutate):
    raw = seed("com.microsoft.FastGelu")
    mutate(raw)
    return json.dumps(raw)


BROKEN = {  # id -> (manifest text, a fragment the message must hold)
    "not-json": ("{ this is not json", "malformed JSON at line 1"),
    "not-utf8": (b'{"domain": "\xff\xfe"}', "not UTF-8"),
    "top-level-list": ("[1, 2, 3]", "top level"),
    "deeply-nested": ("[" * 100000 + "]" * 100000, "nested too deeply"),
    "duplicate-key": ('{"domain": "a", "domain": "b"}', "duplicate key"),
    "schema": (_variant(lambda r: r.__setitem__("inputs", 7)), "/inputs"),
    "bad-expression": (
        _variant(lambda r: r["variants"][0]["when"].__setitem__(0, "shapes.X ** ")),
        "/variants/0/when/0",
    ),
    "unicode-name": (_variant(lambda r: r.__setitem__("name", "Gé\u0301lu\u202e")), "manifest.json"),
    "huge-number": (_variant(lambda r: r["tunables"].__setitem__("WORKGROUP_SIZE", 10**400)), "manifest.json"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_python_m_cases_reports_a_malformed_manifest_without_a_traceback(tmp_path, kind):
    text, fragment = BROKEN[kind]
    pkg = _write(tmp_path / "specs", f"broken.{kind}", text)
    proc = run_cli("-m", "cases", "--check", "--specs", str(pkg.parent), "--out", str(tmp_path / "out"), timeout=60)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == 2, out[-2000:]
    assert "manifest.json" in out and fragment in out, out[-2000:]


def test_pytest_conformance_reports_every_malformed_manifest_and_runs_the_rest(tmp_path, make_specs):
    specs = make_specs(**{GOOD: GOOD})
    for kind, (text, _) in BROKEN.items():
        _write(specs, f"broken.{kind}", text)
    proc = run_conformance(specs, "-k", "manifest or Gelu/f32/X[8]", timeout=180)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-4000:]
    for kind, (_, fragment) in BROKEN.items():
        assert f"broken.{kind}/manifest" in out, f"{kind} not reported:\n{out[-3000:]}"
        assert fragment in out, f"{kind}: {fragment!r} not in the output"
    assert f"{len(BROKEN)} failed" in out and " passed" in out, out[-1500:]  # the good package still ran
