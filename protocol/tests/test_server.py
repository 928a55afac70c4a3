"""The env server SDK: card, data plane error contract, MCP tools, extensions, ToolContext."""

from __future__ import annotations

from typing import Annotated

import httpx
import pytest
from pydantic import Field

from agentenv_protocol import (
    AgentEnvEnvironment,
    DataPart,
    EnvClient,
    TextPart,
    ToolContext,
    environment_card,
    extension,
    get_data,
    tool,
)
from agentenv_protocol.errors import (
    EnvUnavailable,
    HandlerFailed,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    ToolCallError,
)
from agentenv_protocol.examples.notes import NotesEnv
from agentenv_protocol.serving import serve_in_thread

# a hand-written stateless request: no initialize, no session (the server is stateless JSON)
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


class Small(NotesEnv):
    max_request_bytes = 2048


@pytest.fixture
def notes():
    server = serve_in_thread(Small().create_app())
    yield server.url
    server.stop()


def rpc(url: str, body, **kw) -> httpx.Response:
    if isinstance(body, (bytes, str)):
        return httpx.post(
            url + "/agentenv", content=body, headers={"content-type": "application/json"}, **kw
        )
    return httpx.post(url + "/agentenv", json=body, **kw)


def mcp_call(
    url: str, name: str, arguments: dict, meta: dict | None = None, headers: dict | None = None
) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": dict(meta or {})},
    }
    routing = {"mcp-method": "tools/call", "mcp-name": name}
    response = httpx.post(
        url + "/mcp", json=body, headers={**MCP_HEADERS, **routing, **(headers or {})}
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_card_has_the_published_shape(notes):
    card = httpx.get(notes + "/.well-known/agent-env.json").json()
    assert card["name"] == "notes" and card["protocolVersion"] == "1.0"
    assert card["url"] == "/agentenv" and card["preferredTransport"] == "JSONRPC"
    assert card["additionalInterfaces"] == [{"url": "/mcp", "transport": "mcp"}]
    caps = card["capabilities"]
    assert caps["operations"] == ["data/reset", "data/add", "data/get"]
    add_note = next(t for t in caps["tools"] if t["name"] == "add_note")
    assert add_note["description"] == "Create a note; fails if the title is taken."
    assert add_note["inputSchema"]["properties"]["title"] == {
        "type": "string",
        "description": "Unique title",
    }
    assert (
        "ctx" not in add_note["inputSchema"]["properties"]
    )  # ToolContext is injected, not a wire parameter
    assert add_note["inputSchema"]["required"] == ["title", "body"]
    [ext] = caps["extensions"]
    assert ext["uri"] == "urn:agentenv:example-stats/v1"
    assert ext["params"]["endpoint"] == "/agentenv/ext/stats"
    assert ext["params"]["methods"]["stats"]["method"] == "GET"


def test_environment_name_overrides_the_card_name(monkeypatch):
    monkeypatch.setenv("ENVIRONMENT_NAME", "inbox-7")
    assert NotesEnv().card.name == "inbox-7"


def test_data_plane_round_trip(notes):
    assert rpc(
        notes,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "data/add",
            "params": {
                "parts": [{"kind": "data", "data": {"notes": [{"title": "a", "body": "x"}]}}]
            },
        },
    ).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    got = rpc(notes, {"jsonrpc": "2.0", "id": 2, "method": "data/get"}).json()
    assert got["result"]["parts"][0]["data"]["notes"][0]["title"] == "a"
    assert (
        rpc(notes, {"jsonrpc": "2.0", "id": 3, "method": "data/reset", "params": {}}).json()[
            "result"
        ]
        == {}
    )
    assert rpc(notes, {"jsonrpc": "2.0", "id": 4, "method": "data/get"}).json()["result"] == {
        "parts": [{"kind": "data", "data": {"notes": []}}]
    }


@pytest.mark.parametrize(
    "body, code, status, words",
    [
        (b"{not json", -32700, 200, "parse error"),
        ({"id": 1, "method": "data/get"}, -32600, 200, "jsonrpc"),
        ([{"jsonrpc": "2.0", "id": 1, "method": "data/get"}], -32600, 200, "batch"),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600, 200, "method"),
        ({"jsonrpc": "2.0", "id": 1, "method": "data/delete"}, -32601, 200, "data/delete"),
        (
            {"jsonrpc": "2.0", "id": 1, "method": "data/add", "params": {"parts": []}},
            -32602,
            200,
            "parts",
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "data/add",
                "params": {"parts": [{"kind": "video"}]},
            },
            -32602,
            200,
            "parts",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "data/add", "params": {"parts": [{"kind": "text", "text": "'
            + b"x" * 4096
            + b'"}]}}',
            -32600,
            413,
            "exceeds",
        ),
    ],
)
def test_bad_requests_get_the_documented_error_and_the_server_keeps_serving(
    notes, body, code, status, words
):
    response = rpc(notes, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and words in error["message"]
    assert rpc(notes, {"jsonrpc": "2.0", "id": 9, "method": "data/get"}).json()["result"]["parts"]


def test_handler_failure_is_32000_with_the_authors_code(notes):
    response = rpc(
        notes,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "data/add",
            "params": {"parts": [{"kind": "text", "text": "hello"}]},
        },
    ).json()
    assert response["error"]["code"] == -32000
    assert response["error"]["data"] == {
        "code": "unsupported_part",
        "retryable": False,
        "applied": "no",
    }
    assert "data parts" in response["error"]["message"]


def test_oversize_mcp_body_is_refused_and_server_keeps_serving(notes):
    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "add_note",
            "arguments": {"title": "t", "body": "x" * 10_000},
        },
    }
    response = httpx.post(
        notes + "/mcp",
        json=big,
        headers={**MCP_HEADERS, "mcp-method": "tools/call", "mcp-name": "add_note"},
    )
    assert response.status_code == 413
    assert mcp_call(notes, "list_notes", {})["isError"] is False


def test_tools_validate_arguments_with_named_fields(notes):
    result = mcp_call(notes, "add_note", {"titel": "a"})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "title: required" in text and "body: required" in text and "did you mean 'title'" in text
    wrong_type = mcp_call(notes, "add_note", {"title": ["a"], "body": "b"})
    assert wrong_type["isError"] and "title:" in wrong_type["content"][0]["text"]
    unknown = mcp_call(notes, "read_nots", {})
    assert unknown["isError"] and "did you mean 'read_note'" in unknown["content"][0]["text"]
    assert mcp_call(notes, "list_notes", {})["isError"] is False


def test_agentenv_error_becomes_code_colon_message(notes):
    assert mcp_call(notes, "add_note", {"title": "a", "body": "b"})["isError"] is False
    again = mcp_call(notes, "add_note", {"title": "a", "body": "b"})
    assert (
        again["isError"]
        and again["content"][0]["text"] == "conflict: a note titled 'a' already exists"
    )


def test_tool_context_carries_the_role_from_meta_over_header(notes):
    mcp_call(
        notes,
        "add_note",
        {"title": "by-meta", "body": ""},
        meta={"agentenv.io/role": "alice"},
        headers={"AgentEnv-Role": "mallory"},
    )
    mcp_call(
        notes, "add_note", {"title": "by-header", "body": ""}, headers={"AgentEnv-Role": "bob"}
    )
    assert (
        mcp_call(notes, "read_note", {"title": "by-meta"})["structuredContent"]["author"] == "alice"
    )
    assert (
        mcp_call(notes, "read_note", {"title": "by-header"})["structuredContent"]["author"] == "bob"
    )


def test_extension_binds_query_params_and_rejects_bad_ones(notes):
    rpc(
        notes,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "data/add",
            "params": {
                "parts": [
                    {
                        "kind": "data",
                        "data": {"notes": [{"title": "ab"}, {"title": "ac"}, {"title": "b"}]},
                    }
                ]
            },
        },
    )
    assert httpx.get(notes + "/agentenv/ext/stats", params={"prefix": "a"}).json() == {"count": 2}
    bad = httpx.get(notes + "/agentenv/ext/stats", params={"prefx": "a"})
    # an unknown argument is refused, as the existing SDK does, with a did-you-mean
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert error["code"] == "invalid_params" and "did you mean 'prefix'" in error["message"]
    assert error["retryable"] is False and error["applied"] == "no"


def test_decorator_mistakes_are_clear():
    with pytest.raises(TypeError, match="did you mean 'name'"):
        environment_card(nme="x")
    with pytest.raises(TypeError, match="parentheses"):
        environment_card(NotesEnv)
    with pytest.raises(TypeError) as unknown:
        environment_card(description="a bank")
    assert "unknown card field 'description'; the card fields are name, protocolVersion, " in (
        str(unknown.value)
    )
    assert "capabilities, children_environments" in str(unknown.value)


class Fancy(AgentEnvEnvironment):
    @tool(name="{environment_name}_shout")
    async def shout(self, text: Annotated[str, Field(description="words")], times: int = 1) -> str:
        return (text.upper() + " ") * times

    @tool
    def peek(self, ctx: ToolContext) -> dict:
        return {"tool": ctx.tool, "current": ToolContext.current().tool}

    @extension("urn:example:echo/v1")
    async def reflect(self, value: int) -> dict:
        return {"value": value * 2}

    @get_data
    def dump(self) -> list:
        return [TextPart(text="hi")]


@pytest.mark.anyio
async def test_client_against_an_sdk_env():
    server = serve_in_thread(Fancy().create_app())
    try:
        async with EnvClient(server.url, timeout=5) as env:
            await env.wait_ready(timeout=5)
            card = await env.card()
            assert card.name == "Fancy" and card.capabilities.operations == ["data/get"]
            assert [t.name for t in await env.list_tools()] == ["peek", "Fancy_shout"]
            assert (await env.call_tool("Fancy_shout", {"text": "hi", "times": 2})).text == "HI HI "
            assert (await env.call_tool("peek", {})).json() == {"tool": "peek", "current": "peek"}
            assert await env.extension("/agentenv/ext/reflect", {"value": 21}) == {"value": 42}
            assert [p.text for p in await env.get()] == ["hi"]
            with pytest.raises(MethodNotFound, match="data/reset"):
                await env.reset()
            with pytest.raises(ToolCallError, match="Fancy_shout"):
                await env.call_tool("Fancy_shout", {}, raise_on_error=True)
    finally:
        server.stop()


@pytest.mark.anyio
async def test_client_raises_one_class_per_json_rpc_code(notes):
    async with EnvClient(notes, timeout=5) as env:
        with pytest.raises(InvalidParams):
            await env.rpc("data/add", {"parts": []})
        with pytest.raises(MethodNotFound):
            await env.rpc("data/nope")
        with pytest.raises(HandlerFailed) as failed:
            await env.add([TextPart(text="nope")])
        assert failed.value.error_code == "unsupported_part"
        await env.add([DataPart(data={"notes": [{"title": "z"}]})])
        assert (await env.get())[0].data["notes"][0]["title"] == "z"
    async with EnvClient("http://127.0.0.1:9", timeout=1) as dead:
        with pytest.raises(EnvUnavailable, match="unreachable"):
            await dead.reset()
        assert not await dead.ready()


def test_every_json_rpc_code_maps_to_its_class():
    from agentenv_protocol.errors import RpcError, rpc_error_from

    for code, cls in [
        (-32700, ParseError),
        (-32600, InvalidRequest),
        (-32601, MethodNotFound),
        (-32602, InvalidParams),
        (-32000, HandlerFailed),
        (-31999, RpcError),
    ]:
        error = rpc_error_from(
            {"code": code, "message": "m", "data": {"code": "x"}}, method="data/get"
        )
        assert type(error) is cls and error.code == code
        assert str(error).startswith("data/get: m [JSON-RPC")


def test_an_env_written_against_the_existing_import_paths_runs(tmp_path):
    """A module as an existing env would write it: old import paths, sync handlers, a card name."""
    import subprocess
    import sys

    (tmp_path / "legacy_env.py").write_text(
        "from typing import Annotated\n"
        "from pydantic import Field\n"
        "from agentenv_protocol import AgentEnvEnvironment, environment_card, tool, reset_data, add_data, get_data\n"
        "from agentenv_protocol.tool_context import ToolContext, ROLE_META_KEY\n"
        "from agentenv_protocol.types import DataPart\n"
        "@environment_card(name='inventory')\n"
        "class Inventory(AgentEnvEnvironment):\n"
        "    items = {}\n"
        "    @tool(description='Count an item.')\n"
        "    def count(self, sku: Annotated[str, Field(description='SKU')], ctx: ToolContext) -> dict:\n"
        "        return {'sku': sku, 'n': self.items.get(sku, 0), 'role': ctx.role}\n"
        "    @reset_data\n"
        "    def reset(self): self.items.clear()\n"
        "    @add_data\n"
        "    def add(self, parts):\n"
        "        for p in parts: self.items.update(p.data)\n"
        "    @get_data\n"
        "    def get(self): return [DataPart(data=dict(self.items))]\n"
        "if __name__ == '__main__':\n"
        "    Inventory().serve()\n"
    )
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import legacy_env\n"
        "print(json.dumps(legacy_env.Inventory().card.model_dump(exclude_none=True)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    card = __import__("json").loads(out.stdout)
    assert card["name"] == "inventory"
    assert card["capabilities"]["tools"] == [
        {
            "name": "count",
            "description": "Count an item.",
            "inputSchema": {
                "type": "object",
                "properties": {"sku": {"type": "string", "description": "SKU"}},
                "required": ["sku"],
            },
        }
    ]
    assert card["capabilities"]["operations"] == ["data/reset", "data/add", "data/get"]


@pytest.mark.anyio
async def test_a_lean_mcp_client_answers_as_the_httpx_one_and_names_an_unreachable_env():
    server = serve_in_thread(Fancy().create_app())
    try:
        answers = []
        for lean in (False, True):
            async with EnvClient(server.url, timeout=5, lean_mcp=lean) as env:
                tools = [t.name for t in await env.list_tools()]
                shout = await env.call_tool("Fancy_shout", {"text": "hi", "times": 2})
                with pytest.raises(ToolCallError, match="Fancy_shout"):
                    await env.call_tool("Fancy_shout", {}, raise_on_error=True)
                answers.append((tools, shout))
        assert answers[0] == answers[1] and answers[1][1].text == "HI HI "
    finally:
        server.stop()
    async with EnvClient("http://127.0.0.1:9", timeout=1, lean_mcp=True) as dead:
        with pytest.raises(EnvUnavailable, match="unreachable"):
            await dead.call_tool("Fancy_shout", {"text": "hi"})
