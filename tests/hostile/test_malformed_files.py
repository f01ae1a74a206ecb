"""Malformed test.json and golden files (issue 28, crashes): one located error per file, the other packages still
run; never an "unexpected" traceback, a false "worker died", an exhausted memory or a traceback of the gate."""

from __future__ import annotations

import json
import shutil

import pytest

from cases.golden import GoldenError, read_golden
from conformance.__main__ import main
from conformance.certify.testjson import load_test_cases
from conformance.engine.package import REPO_SPECS, load_package
from conformance.errors import ManifestError
from tests.gate.conftest import FASTGELU, git, repo  # noqa: F401  (the ``repo`` fixture)
from tests.hostile.conftest import run_cli, run_conformance

GELU = "com.microsoft.Gelu"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Gelu's test.json, as ``export`` writes it."""
    root = tmp_path_factory.mktemp("exported")
    shutil.copytree(REPO_SPECS / GELU, root / GELU)
    proc = run_cli("-m", "conformance", "export", str(root / GELU), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((root / GELU / "test.json").read_text())


def _accepted(data) -> dict:
    return next(c for c in data["cases"] if c["expect"]["outcome"] == "accepted" and c["outputs"]["Y"])


def _short_outputs(c):
    c["outputs"]["Y"] = c["outputs"]["Y"][:-1]


def _no_atol(c):
    del c["tolerance"]["Y"]["atol"]


def _negative_shape(c):
    c["inputs"]["X"]["shape"] = [-4]


def _null_outputs(c):
    c["outputs"] = None


def _expect_without_outputs(c):
    del c["expect"]["outputs"]


def _id_with_newline(c):
    c["id"] = c["id"] + "\n`# Result: **conforms**"


@pytest.mark.parametrize(
    "break_it, says",
    [
        (_short_outputs, "outputs/Y: expected"),
        (_no_atol, "'atol'"),
        (_negative_shape, "shape"),
        (_null_outputs, "outputs"),
        (_expect_without_outputs, "'outputs'"),
        (_id_with_newline, "id:"),
    ],
)
def test_a_malformed_stored_case_is_one_located_error(tmp_path, exported, break_it, says):
    package_dir = tmp_path / GELU
    shutil.copytree(REPO_SPECS / GELU, package_dir)
    data = json.loads(json.dumps(exported))
    broken = _accepted(data)
    break_it(broken)
    data["cases"] = [data["cases"][0], broken]
    (package_dir / "test.json").write_text(json.dumps(data))
    with pytest.raises(ManifestError) as err:
        load_test_cases(load_package(package_dir))
    assert err.value.pointer == "/cases/1" and "test.json" in str(err.value) and says in str(err.value), str(err.value)


def test_a_malformed_test_json_fails_its_package_only(tmp_path, make_specs, exported):
    specs = make_specs(**{GELU: GELU, FASTGELU: FASTGELU})
    data = json.loads(json.dumps(exported))
    _negative_shape(_accepted(data))
    (specs / GELU / "test.json").write_text(json.dumps(data))
    report = tmp_path / "report.json"
    proc = run_conformance(specs, "-k", "manifest or X[4]+bias[4]/vec4_bias", f"--conformance-report={report}")
    out = proc.stdout + proc.stderr
    assert "unexpected" not in out and "worker" not in out and "Traceback" not in out, out[-3000:]
    cases = json.loads(report.read_text())["cases"]
    load = [c for c in cases if c["family"] == "load"]
    assert len(load) == 1 and "test.json" in load[0]["detail"] and "/cases/" in load[0]["detail"], load
    assert any(c["package"] == FASTGELU and c["status"] == "passed" for c in cases)  # the other package ran


GOLDEN_BREAKAGE = {
    "yaml-tag": b"package: !!python/object:os.system echo\ncases: []\n",
    "top-level-list": b"- 1\n- 2\n",
    "not-utf8": b"package: \xff\xfe\ncases: []\n",
    "alias-bomb": b"a: &a [x,x,x,x,x,x,x,x,x]\n"
    + b"".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n".encode() for p, n in zip("abcdefgh", "bcdefghi")),
}


@pytest.mark.parametrize("kind", sorted(GOLDEN_BREAKAGE))
def test_a_malformed_golden_file_is_refused_with_its_name(tmp_path, kind):
    golden = tmp_path / f"{FASTGELU}.yaml"
    golden.write_bytes(GOLDEN_BREAKAGE[kind])
    with pytest.raises(GoldenError) as err:
        read_golden(golden)
    assert str(golden) in str(err.value)


def test_a_malformed_golden_file_is_a_located_error_in_the_check_and_the_gate(repo, capsys):  # noqa: F811
    golden = repo / "cases" / f"{FASTGELU}.yaml"
    golden.write_bytes(GOLDEN_BREAKAGE["top-level-list"])
    proc = run_cli("-m", "cases", "--check", "--specs", str(repo / "specs"), "--out", str(repo / "cases"), timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert str(golden) in proc.stderr, proc.stderr
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "broken golden file")
    golden.write_bytes(GOLDEN_BREAKAGE["alias-bomb"])  # and a behaviour change, so that the gate reads it
    manifest = repo / "specs" / FASTGELU / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"WORKGROUP_SIZE": 256', '"WORKGROUP_SIZE": 128'))
    assert main(["diff", "HEAD", "--gate", "--repo", str(repo)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{FASTGELU}.yaml" in err and "aliases" in err, err
