"""Interface manifests: the version rule readers apply, lenient reading, compact writing."""

from __future__ import annotations

import json

import pytest

from agentenv_protocol import MANIFEST_VERSION, CliManifest, InterfaceManifest, manifest_compatible

TICKETS = {
    "service": "tickets",
    "manifest_version": MANIFEST_VERSION,
    "entities": [
        {
            "name": "Ticket",
            "fields": [{"name": "id", "type": "string", "required": True, "read_only": True}],
            "relationships": [{"field": "owner", "references": "User"}],
            "operations": [{"kind": "list", "tool": "list_tickets", "params": []}],
        }
    ],
    "actions": [{"name": "close_all", "tool": "close_all"}],
}


@pytest.mark.parametrize(
    ("served", "ok"),
    [
        (MANIFEST_VERSION, True),
        ("0.1.9", True),
        ("0.2.0", False),
        ("1.0.0", False),
        ("0.1.0-rc1", False),
        ("v0.1.0", False),
        (10, False),
    ],
)
def test_a_reader_for_the_current_version(served, ok):
    assert manifest_compatible(served) is ok


def test_after_1_0_minors_are_compatible_majors_are_not():
    assert manifest_compatible("2.5.1", "2.0.0")
    assert not manifest_compatible("3.0.0", "2.9.9")


def test_a_newer_manifest_loads_and_writes_back_compactly():
    newer = {**TICKETS, "theme": "dark", "entities": [{**TICKETS["entities"][0], "icon": "t"}]}
    model = InterfaceManifest.model_validate(newer)
    written = model.to_json()
    assert written.endswith("\n")
    assert "theme" not in written and "icon" not in written
    assert "description" not in written and "format" not in written  # unset optionals left out
    assert InterfaceManifest.model_validate(json.loads(written)) == model
    assert model.entities[0].operations[0].kind == "list"


def test_an_operation_kind_outside_the_five_is_refused():
    bad = json.loads(json.dumps(TICKETS))
    bad["entities"][0]["operations"][0]["kind"] = "archive"
    with pytest.raises(ValueError, match="kind"):
        InterfaceManifest.model_validate(bad)


def test_the_cli_projection_is_marked_as_such():
    cli = CliManifest(service="tickets")
    assert json.loads(cli.to_json()) == {
        "service": "tickets",
        "manifest_version": MANIFEST_VERSION,
        "interface": "cli",
        "entities": [],
        "actions": [],
    }
