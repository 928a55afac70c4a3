"""`data/get` with a `write_namespace` grant, end to end: a served env advertises
`urn:agentenv:data-objects/v1`, uploads its export to S3 (moto) through the grant the client
sends, and answers with a part naming where; bad grants are refused without echoing them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agentenv_protocol import (
    DATA_OBJECTS_EXTENSION_URI,
    AgentEnvEnvironment,
    DataPart,
    FilePart,
    environment_card,
    get_data,
    uploaded_file_part,
    uploaded_object_path,
)
from agentenv_protocol import client as env_client
from agentenv_protocol.serving import serve_in_thread
from agentenv_protocol.transfers import HttpPostPolicyGrant, NamespaceUploader, WriteNamespaceGrant

pytestmark = pytest.mark.anyio


@environment_card(name="drive")
class Drive(AgentEnvEnvironment):
    """Exports inline without a grant, as `export.zip` under the grant's root with one."""

    @get_data
    async def export(self, write_namespace: WriteNamespaceGrant | None = None) -> list:
        if write_namespace is None:
            return [DataPart(data={"files": 1})]
        await NamespaceUploader(write_namespace).upload("exports/export.zip", b"PK\x03\x04drive")
        return [
            uploaded_file_part("exports/export.zip", name="export.zip", mime_type="application/zip")
        ]


@environment_card(name="inline")
class Inline(AgentEnvEnvironment):
    @get_data
    def export(self) -> list:
        return [DataPart(data={"files": 1})]


@pytest.fixture
def served():
    servers = []

    def serve(env: AgentEnvEnvironment) -> str:
        servers.append(serve_in_thread(env.create_app()))
        return servers[-1].url

    yield serve
    for server in servers:
        server.stop()


def grant(s3, root: str) -> WriteNamespaceGrant:
    post = s3.client.generate_presigned_post(s3.bucket, root + "/${filename}", ExpiresIn=300)
    return WriteNamespaceGrant(
        root_path=root,
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
        max_objects=1,
        max_object_bytes=1024,
        max_total_bytes=1024,
        write=HttpPostPolicyGrant(
            kind="http-post-policy",
            url=post["url"],
            fields={k: v for k, v in post["fields"].items() if k != "key"},
            path_field="key",
            file_field="file",
        ),
    )


async def test_the_export_is_uploaded_through_the_grant_and_the_answer_names_it(s3, served):
    url = served(Drive())
    card = await env_client.get_card(url)
    assert env_client.find_extension(card, DATA_OBJECTS_EXTENSION_URI) is not None

    inline = await env_client.get_data(url)
    assert [p.data for p in inline.parts] == [{"files": 1}]

    answer = await env_client.get_data(url, write_namespace=grant(s3, "runs/r1"))
    (part,) = answer.parts
    assert isinstance(part, FilePart) and part.file.name == "export.zip"
    path = uploaded_object_path(part)
    assert path == "exports/export.zip"
    stored = s3.client.get_object(Bucket=s3.bucket, Key=f"runs/r1/{path}")["Body"].read()
    assert stored == b"PK\x03\x04drive"


async def test_an_env_whose_export_takes_no_grant_does_not_advertise_one(served):
    url = served(Inline())
    card = await env_client.get_card(url)
    assert env_client.find_extension(card, DATA_OBJECTS_EXTENSION_URI) is None


def test_a_bad_grant_is_a_params_error_naming_the_field_not_its_values(s3, served):
    url = served(Drive())
    sent = grant(s3, "runs/r2").model_dump(mode="json")
    sent["root_path"] = "../elsewhere"
    sent["write"]["fields"]["policy"] = "signed-policy-secret"
    body = {"jsonrpc": "2.0", "id": 1, "method": "data/get", "params": {"write_namespace": sent}}
    answer = httpx.post(url + "/agentenv", json=body).json()
    assert answer["error"]["code"] == -32602
    detail = answer["error"]["data"]["detail"]
    assert (
        detail
        == "write_namespace.root_path: root_path '../elsewhere' is not a normalized relative path"
    )
    assert "signed-policy-secret" not in json.dumps(answer)


@pytest.mark.parametrize("path", ["../x.zip", "/x.zip", "a//b", "a/./b", "a/", "", "a\\b"])
def test_an_upload_path_must_stay_under_the_root(path):
    with pytest.raises(ValueError, match="not a normalized relative path"):
        uploaded_file_part(path)
    marker = FilePart(file={"uri": "x"}, metadata={DATA_OBJECTS_EXTENSION_URI: {"path": path}})
    with pytest.raises(ValueError, match="not a normalized relative path"):
        uploaded_object_path(marker)


def test_a_part_without_the_marker_names_no_upload():
    assert uploaded_object_path(FilePart(file={"uri": "x"})) is None
    assert (
        uploaded_object_path(DataPart(data={}, metadata={DATA_OBJECTS_EXTENSION_URI: {}})) is None
    )
