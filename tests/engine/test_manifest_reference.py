"""specs/README.md's manifest reference names every field of the schema (a field added to the schema without
documentation fails here)."""

from __future__ import annotations

import json
import re

from tests.engine.conftest import ROOT

SCHEMA = json.loads((ROOT / "conformance" / "engine" / "schema" / "manifest.schema.json").read_text())
SECTION = (ROOT / "specs" / "README.md").read_text().split("## The manifest format", 1)[1].split("\n## ", 1)[0]


def fields(node: dict) -> set[str]:
    """Every property name anywhere under ``node`` (definitions included)."""
    out = set()
    if isinstance(node, dict):
        out |= set(node.get("properties", {}))
        for value in node.values():
            out |= fields(value)
    elif isinstance(node, list):
        for value in node:
            out |= fields(value)
    return out


def test_every_schema_field_is_documented():
    documented = set(re.findall(r"`([A-Za-z]+)`", SECTION))
    missing = sorted(fields(SCHEMA) - documented)
    assert not missing, f"specs/README.md, 'The manifest format', does not document {missing}"


def test_the_reference_links_the_schema():
    assert "(../conformance/engine/schema/manifest.schema.json)" in SECTION
