"""The lean forwarding layer: stale keep-alive connections, and MCP servers that only speak the
older initialize handshake with session ids and SSE answers."""

from __future__ import annotations

import asyncio
import json
import uuid

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentenv_protocol import EnvClient
from agentenv_protocol.fastpost import ForwardConnectError, PostPool
from agentenv_protocol.gateway import Gateway, serve_gateway
from agentenv_protocol.mcp_http import McpHttp
from agentenv_protocol.serving import serve_in_thread

pytestmark = pytest.mark.anyio


async def test_pool_retries_a_connection_the_server_closed():
    served = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            [x for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")][0].split(
                b":"
            )[1]
        )
        body = await reader.readexactly(length)
        served += 1
        if served == 2:  # chunked, split over several writes
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            await writer.drain()
            for piece in (body[:3], body[3:]):
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
                await asyncio.sleep(0.01)
            writer.write(b"0\r\n\r\n")
        elif served == 3:  # delimited by closing the connection
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"
                + body
            )
        else:
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
        await writer.drain()
        writer.close()  # closes without saying so: the pooled connection is stale

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = PostPool(f"http://127.0.0.1:{port}")
    try:
        for n in range(4):
            answer = await pool.post("/x", json.dumps({"n": n}).encode())
            await asyncio.sleep(0.05)
            assert answer.status_code == 200 and answer.json() == {"n": n}
        assert served == 4
    finally:
        await pool.aclose()
        server.close()
    with pytest.raises(ForwardConnectError, match="cannot connect"):
        await PostPool(f"http://127.0.0.1:{port}").post("/x", b"{}")


def legacy_server(sessions: set[str] | None = None) -> Starlette:
    """An MCP server that knows only the handshake: session ids, SSE answers, no 2026 envelope.
    `sessions` collects the session ids it hands out."""
    sessions = set() if sessions is None else sessions

    def sse(message: dict) -> Response:
        return Response(
            f"event: message\ndata: {json.dumps(message)}\n\n", media_type="text/event-stream"
        )

    async def mcp(request: Request) -> Response:
        message = await request.json()
        if request.headers.get("mcp-protocol-version") == "2026-07-28":
            return JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": message.get("id"),
                    "error": {
                        "code": -32600,
                        "message": "Bad Request: Unsupported protocol version",
                    },
                },
                status_code=400,
            )
        if message.get("method") == "initialize":
            sid = uuid.uuid4().hex
            sessions.add(sid)
            return JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "legacy", "version": "0"},
                    },
                },
                headers={"mcp-session-id": sid},
            )
        if request.headers.get("mcp-session-id") not in sessions:
            return JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no session"}},
                status_code=400,
            )
        if "id" not in message:
            return Response(status_code=202)
        if message["method"] == "tools/list":
            return sse(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "tools": [
                            {
                                "name": "shout",
                                "description": "Upper-case.",
                                "inputSchema": {"type": "object"},
                            }
                        ]
                    },
                }
            )
        if message["method"] == "tools/call":
            role = (message["params"].get("_meta") or {}).get("agentenv.io/role")
            text = message["params"]["arguments"]["text"].upper() + f" ({role})"
            return sse(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"content": [{"type": "text", "text": text}], "isError": False},
                }
            )
        return sse(
            {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "nope"}}
        )

    return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])


async def test_client_and_gateway_fall_back_to_the_handshake():
    legacy = serve_in_thread(legacy_server())
    try:
        async with EnvClient(legacy.url, mcp_path="/mcp", role="ops") as env:
            assert [t.name for t in await env.list_tools()] == ["shout"]
            assert (await env.call_tool("shout", {"text": "hi"})).text == "HI (ops)"
            assert env._mcp.era == "legacy"
        gateway = Gateway({"old": legacy.url})
        token = gateway.issue_token("agent")
        with serve_gateway(gateway) as server:
            async with EnvClient(server.url, token=token) as client:
                assert (
                    await client.call_tool("shout", {"text": "via gateway"})
                ).text == "VIA GATEWAY (agent)"
        pool = PostPool(legacy.url)
        mcp = McpHttp(legacy.url + "/mcp", pool=pool)
        answer = await mcp.request("tools/call", {"name": "shout", "arguments": {"text": "x"}})
        assert answer["result"]["content"][0]["text"] == "X (None)"
        await pool.aclose()
    finally:
        legacy.stop()


async def test_concurrent_first_calls_share_one_handshake(spawn_env):
    """A fresh requester hit by many calls at once (the gateway's first burst): every call is
    answered, and a stateful server sees one handshake, not one per call."""
    sessions: set[str] = set()
    legacy = serve_in_thread(legacy_server(sessions))
    ours = spawn_env("echo")  # our env server: mcp 1.x, refuses the 2026 envelope with a 400
    try:
        for url, tool in ((legacy.url, "shout"), (ours.url, "echo")):
            pool = PostPool(url)
            mcp = McpHttp(url + "/mcp", pool=pool)
            answers: list[dict] = []

            async def call(n: int, mcp=mcp, tool=tool, answers=answers) -> None:
                params = {"name": tool, "arguments": {"text": f"t{n}"}}
                answers.append(await mcp.request("tools/call", params))

            async with anyio.create_task_group() as tg:
                for n in range(32):
                    tg.start_soon(call, n)
            await pool.aclose()
            assert len(answers) == 32 and all("result" in a for a in answers), answers
            assert mcp.era == "legacy"
        assert len(sessions) == 1
    finally:
        legacy.stop()


async def test_an_env_that_serves_get_time_keeps_it_and_the_clock_refuses_to_shadow_it():
    from agentenv_protocol import AgentEnvEnvironment, tool

    class Timely(AgentEnvEnvironment):
        @tool()
        def get_time(self) -> str:
            return "env time"

    env = serve_in_thread(Timely().create_app())
    try:
        gateway = Gateway({"timely": env.url})
        with serve_gateway(gateway) as server:
            import httpx

            admin = {"authorization": f"Bearer {gateway.admin_token}"}
            clash = httpx.put(
                server.url + "/clock/set-time",
                headers=admin,
                json={"virtual_time": "2026-01-01T00:00:00Z"},
            )
            assert (
                clash.status_code == 409
                and "already served by environment 'timely'" in clash.json()["error"]
            )
            async with EnvClient(server.url, token=gateway.admin_token) as client:
                assert (await client.call_tool("get_time", {})).text == "env time"
    finally:
        env.stop()


async def test_envs_can_be_added_and_removed_while_serving():
    from agentenv_protocol.examples.echo import EchoEnv
    from agentenv_protocol.examples.notes import NotesEnv
    from agentenv_protocol.gateway import GatewayError

    echo, notes, echo2 = (
        serve_in_thread(EchoEnv().create_app()),
        serve_in_thread(NotesEnv().create_app()),
        serve_in_thread(EchoEnv().create_app()),
    )
    try:
        from agentenv_protocol.gateway import start_gateway

        gateway = Gateway({"echo": echo.url})
        with await start_gateway(gateway) as server:
            async with EnvClient(server.url, token=gateway.admin_token) as client:
                assert await gateway.add_env("notes", notes.url) == [
                    "add_note",
                    "list_notes",
                    "read_note",
                ]
                assert not (
                    await client.call_tool("add_note", {"title": "a", "body": "b"})
                ).is_error
                with pytest.raises(
                    GatewayError, match="'echo' is served by both 'echo' and 'echo2'"
                ):
                    await gateway.add_env("echo2", echo2.url)
                assert "echo2" not in gateway.envs
                gateway.remove_env("notes")
                gone = await client.call_tool("list_notes", {})
                assert gone.is_error and "unknown tool 'list_notes'" in gone.text
                assert "add_note" not in {t.name for t in await client.list_tools()}
    finally:
        for server in (echo, notes, echo2):
            server.stop()


async def test_gateway_can_run_inside_the_callers_event_loop():
    from agentenv_protocol.examples.echo import EchoEnv
    from agentenv_protocol.gateway import gateway_server

    echo = serve_in_thread(EchoEnv().create_app())
    try:
        gateway = Gateway({"echo": echo.url})
        async with gateway_server(gateway) as url:
            async with EnvClient(url, token=gateway.issue_token("agent")) as client:
                assert (await client.call_tool("whoami", {})).json()["role"] == "agent"
    finally:
        echo.stop()
