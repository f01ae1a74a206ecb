"""A proposal brings the templates its variants name (``templates``: name -> file beside the proposal): added to
the copy, never replacing one of the package's, never read from outside the proposal's folder."""

from __future__ import annotations

import json

import pytest

from conformance.engine.package import REPO_SPECS, load_package
from conformance.errors import ManifestError
from conformance.tools import proposal

PACKAGE = REPO_SPECS / "ai.onnx.Add"


def write(tmp_path, templates, text="// proposed\n"):
    folder = tmp_path / "proposals"
    (folder / "mine").mkdir(parents=True)
    (folder / "mine" / "extra.wgsl.jinja").write_text(text)
    path = folder / "mine.json"
    path.write_text(json.dumps({"packages": {"ai.onnx.Add": {"templates": templates}}}))
    return path


def test_a_proposal_template_is_added_to_the_copy(tmp_path):
    path = write(tmp_path, {"extra.wgsl.jinja": "mine/extra.wgsl.jinja"})
    copy = proposal.apply(PACKAGE, path, tmp_path / "out")
    assert (copy / "extra.wgsl.jinja").read_text() == "// proposed\n"
    assert load_package(copy).name == "ai.onnx.Add"
    assert (copy / "elementwise-add.wgsl.jinja").read_bytes() == (PACKAGE / "elementwise-add.wgsl.jinja").read_bytes()


def test_a_proposal_cannot_replace_a_template_of_the_package(tmp_path):
    path = write(tmp_path, {"elementwise-add.wgsl.jinja": "mine/extra.wgsl.jinja"})
    with pytest.raises(ManifestError, match="template 'elementwise-add.wgsl.jinja' already exists") as err:
        proposal.apply(PACKAGE, path, tmp_path / "out")
    assert err.value.pointer == "/packages/ai.onnx.Add/templates/elementwise-add.wgsl.jinja"


def test_a_proposal_template_outside_its_folder_is_refused(tmp_path):
    (tmp_path / "secret.wgsl.jinja").write_text("outside")
    path = write(tmp_path, {"extra.wgsl.jinja": "../secret.wgsl.jinja"})
    with pytest.raises(ManifestError, match="outside the package directory") as err:
        proposal.apply(PACKAGE, path, tmp_path / "out")
    assert "../secret.wgsl.jinja" in str(err.value)


@pytest.mark.parametrize("name", ["../x.wgsl.jinja", "sub/x.wgsl.jinja", "x.wgsl", ".hidden.jinja"])
def test_a_template_name_is_a_plain_jinja_file_name(tmp_path, name):
    path = write(tmp_path, {name: "mine/extra.wgsl.jinja"})
    with pytest.raises(ManifestError, match="expected a template file name") as err:
        proposal.apply(PACKAGE, path, tmp_path / "out")
    assert err.value.pointer == f"/packages/ai.onnx.Add/templates/{name}"
