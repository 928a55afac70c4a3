"""The intake declaration on a served env's card, read back by the client, and the fit check a
caller runs before `data/add`."""

from __future__ import annotations

import pytest

from agentenv_protocol import (
    INTAKE_EXTENSION_URI,
    AgentEnvEnvironment,
    IntakeDeclaration,
    IntakeFormat,
    add_data,
    environment_card,
    intake_extension,
    intake_fit_check,
)
from agentenv_protocol import client as env_client
from agentenv_protocol.serving import serve_in_thread

pytestmark = pytest.mark.anyio

CRM_INTAKE = IntakeDeclaration(
    add=[
        IntakeFormat(
            part="data",
            format="json",
            load="additive",
            tables={"contacts": {"required": ["id", "email"]}, "deals": {"required": ["id"]}},
        ),
        IntakeFormat(
            part="file", format="zip-bundle", mimeTypes=["application/zip"], load="replace"
        ),
    ],
    get=[IntakeFormat(part="data", format="json")],
)


@environment_card(name="crm", capabilities={"extensions": [intake_extension(CRM_INTAKE)]})
class Crm(AgentEnvEnvironment):
    @add_data
    def load(self, parts: list) -> None:
        pass


@pytest.fixture
def crm_url():
    server = serve_in_thread(Crm().create_app())
    yield server.url
    server.stop()


async def test_a_served_card_carries_the_declaration_the_client_reads_back(crm_url):
    card = await env_client.get_card(crm_url)
    declared = env_client.intake_declaration(card)
    assert declared["add"][0] == {
        "part": "data",
        "format": "json",
        "load": "additive",
        "tables": {"contacts": {"required": ["id", "email"]}, "deals": {"required": ["id"]}},
    }
    assert "bundleLayout" not in declared["add"][1]  # unset fields stay off the card
    assert IntakeDeclaration.model_validate(declared) == CRM_INTAKE

    fits = {"contacts": [{"id": 1, "email": "a@b", "extra": True}], "owner": "u1"}
    assert intake_fit_check(declared, fits) == []
    problems = intake_fit_check(declared, {"contacts": [{"id": 1}, {"id": 2}], "tickets": []})
    assert problems == [
        "contacts: missing required field 'email' in 2 of 2 record(s) (first: index 0)",
        "collection 'tickets' is not accepted (the env's intake declares: contacts, deals)",
    ]


def test_an_empty_declaration_reads_as_no_claim():
    ext = intake_extension(IntakeDeclaration())
    assert (ext.uri, ext.params) == (INTAKE_EXTENSION_URI, {})
    card = {"capabilities": {"extensions": [ext.model_dump()]}}
    assert env_client.intake_declaration(card) is None
    assert intake_fit_check(None, {"anything": [{}]}) == []


def test_an_env_that_takes_only_files_refuses_data_parts():
    files_only = IntakeDeclaration(add=[IntakeFormat(part="file", format="zip-bundle")])
    (problem,) = intake_fit_check(files_only.model_dump(exclude_none=True), {"contacts": []})
    assert "does not accept part=data" in problem


def test_a_declaration_without_tables_accepts_any_collection():
    loose = IntakeDeclaration(add=[IntakeFormat(part="data", format="json")])
    assert intake_fit_check(loose.model_dump(exclude_none=True), {"x": [{"y": 1}]}) == []
