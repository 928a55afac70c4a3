"""ToolSession on the wire, and an env mounted on either FastMCP with its tool rules.

The scripted MCP server below is a real HTTP server (uvicorn in a thread) whose answer to each
method a test chooses, so the replies a real server rarely sends (broken events, batches, pages,
a forgotten session) reach ToolSession through a real socket. The envs are served for real:
mcp's FastMCP and the standalone fastmcp package over streamable HTTP, and `create_app()` in
memory through mcp's own client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator

import fastmcp
import httpx
import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentenv_protocol import (
    ROLE_HEADER,
    AgentEnvEnvironment,
    AgentEnvFastMCPApplication,
    EnvironmentCard,
    ToolContext,
    ToolSession,
    ToolSessionError,
    create_fastmcp_app,
    environment_card,
    tool,
)
from agentenv_protocol.serving import serve_in_thread

pytestmark = pytest.mark.anyio

Answer = Callable[[dict], Response]


class Scripted:
    """An MCP endpoint at /mcp: `answers[method]` (a function of the request) answers, else a
    plain result; it records (method, headers, body) of every request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict, dict | None]] = []
        self.answers: dict[str, Answer] = {}
        self.known = {"sess-7"}

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/mcp", self._endpoint, methods=["POST", "DELETE"])])

    async def _endpoint(self, request: Request) -> Response:
        body = json.loads(await request.body() or b"null")
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append((request.method, headers, body))
        return await self._answer(request.method, headers, body)

    async def _answer(self, verb: str, headers: dict, body: dict | None) -> Response:
        session = headers.get("mcp-session-id")
        if verb == "DELETE":
            self.known.discard(session)
            return Response(status_code=200)
        if session is not None and session not in self.known:
            return JSONResponse({"error": "unknown session"}, status_code=404)
        if "id" not in body:
            return Response(status_code=202)
        answer = self.answers.get(body["method"])
        if answer is not None:
            result = answer(body)
            return await result if asyncio.iscoroutine(result) else result
        if body["method"] == "initialize":
            return JSONResponse(
                reply(body, {"protocolVersion": "2025-03-26", "capabilities": {}}),
                headers={"mcp-session-id": "sess-7"},
            )
        return JSONResponse(reply(body, {"tools": []}))

    def methods(self) -> list[str]:
        return [body["method"] if body else verb for verb, _, body in self.seen]


def reply(request: dict, result: object) -> dict:
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def events(text: str) -> Response:
    return Response(text, media_type="text/event-stream")


@pytest.fixture
def scripted() -> Iterator[tuple[Scripted, str]]:
    server = Scripted()
    with serve_in_thread(server.app()) as running:
        yield server, running.url + "/mcp"


async def test_a_session_is_initialized_on_open_kept_on_every_request_and_ended_on_close(
    scripted,
):
    server, url = scripted
    pages = {None: (["one", "two"], "c2"), "c2": (["three"], None)}

    def page(body: dict) -> Response:
        names, following = pages[body["params"].get("cursor")]
        result: dict = {"tools": [{"name": n} for n in names]}
        if following:
            result["nextCursor"] = following
        return JSONResponse(reply(body, result))

    server.answers["tools/list"] = page
    async with ToolSession(mcp_url=url, role="grader", headers={"X-Run": "r1"}) as session:
        assert session.session_id == "sess-7" and session.protocol_version == "2025-03-26"
        assert [t.name for t in await session.list_tools()] == ["one", "two", "three"]

    assert server.methods() == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/list",
        "DELETE",
    ]
    first, *later = [headers for _, headers, _ in server.seen]
    assert "mcp-session-id" not in first and "mcp-protocol-version" not in first
    for headers in later:
        assert headers["mcp-session-id"] == "sess-7"
        assert headers["mcp-protocol-version"] == "2025-03-26"
    assert all(h[ROLE_HEADER.lower()] == "grader" and h["x-run"] == "r1" for _, h, _ in server.seen)
    assert server.known == set() and session.session_id == "sess-7"


def _jsonrpc_error(body: dict) -> Response:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32000, "message": "no"}}
    )


@pytest.mark.parametrize(
    "answer, says",
    [
        (_jsonrpc_error, r"tools/call failed: no \(code -32000\)"),
        (lambda b: Response("boom", status_code=502), "tools/call: HTTP 502 from .*: boom"),
        (lambda b: Response("{", media_type="application/json"), "tools/call: unreadable reply"),
        (lambda b: events("data: [1,\n\n"), "tools/call: unreadable reply"),
        (
            lambda b: events(f"data: {json.dumps(reply(b, {'content': []}))}\n"),
            "tools/call: the event stream ended before the reply",
        ),
        (lambda b: Response("ok", media_type="text/html"), "unexpected content type 'text/html'"),
        (lambda b: JSONResponse([reply(b, {})]), "the reply is not a JSON-RPC object"),
        (lambda b: JSONResponse(reply(b, [])), "the reply has no result object"),
        (lambda b: JSONResponse(reply(b, {"content": [7]})), "tools/call: unreadable result"),
    ],
    ids=[
        "jsonrpc-error",
        "http-502",
        "bad-json",
        "bad-event",
        "cut-off-event",
        "html",
        "batch",
        "list-result",
        "non-object-block",
    ],
)
async def test_a_reply_that_is_not_a_tool_result_raises_a_tool_session_error(
    scripted, answer, says
):
    server, url = scripted
    server.answers["tools/call"] = answer
    async with ToolSession(mcp_url=url) as session:
        with pytest.raises(ToolSessionError, match=says):
            await session.call_tool("t")
        assert (await session.list_tools()) == [], "the session is still usable"


async def test_a_forgotten_session_a_slow_reply_and_a_refused_initialize(scripted):
    server, url = scripted

    async def slow(body: dict) -> Response:
        await asyncio.sleep(body["params"]["arguments"]["wait"])
        return JSONResponse(reply(body, {"content": [{"type": "text", "text": "late"}]}))

    server.answers["tools/call"] = slow
    async with ToolSession(mcp_url=url, timeout=0.5) as session:
        with pytest.raises(TimeoutError, match="tools/call did not finish within 0.5s"):
            await session.call_tool("t", {"wait": 3})
        assert (await session.call_tool("t", {"wait": 0})).text == "late"
        server.known.clear()
        with pytest.raises(ToolSessionError, match="no longer knows session sess-7.*may be gone"):
            await session.list_tools()

    server.answers["initialize"] = lambda b: Response("warming up", status_code=503)
    refused = ToolSession(mcp_url=url)
    with pytest.raises(ToolSessionError, match="initialize: HTTP 503 .*warming up"):
        await refused.open()
    with pytest.raises(RuntimeError, match="not open"):
        await refused.call_tool("t")


@environment_card(name="desk")
class Desk(AgentEnvEnvironment):
    tool_access = True

    @tool(annotations={"readOnlyHint": True})
    def read(self, ctx: ToolContext) -> str:
        """Who reads."""
        return ctx.caller.role or "anyone"

    @tool()
    def write(self) -> str:
        return "written"

    @tool(hidden_by_default=True)
    def grade(self) -> str:
        return "graded"


async def _rules_hold(url: str) -> None:
    base = url.removesuffix("/mcp")
    async with httpx.AsyncClient(base_url=base) as rest:
        changed = await rest.post("/tools/disable", json={"role": "agent", "tools": ["write"]})
        assert changed.json() == {"role": "agent", "disabled": ["write"], "allowed": []}
        bad = await rest.post("/tools/enable", json={"role": "", "tools": ["grade"]})
        assert bad.status_code == 400
    async with ToolSession(mcp_url=url, role="agent") as agent, ToolSession(mcp_url=url) as anyone:
        assert sorted(t.name for t in await agent.list_tools()) == ["read"]
        assert sorted(t.name for t in await anyone.list_tools()) == ["read", "write"]
        refused = await agent.call_tool("write")
        hidden = await anyone.call_tool("grade")
        read = await agent.call_tool("read")
        assert agent.session_id and agent.session_id != anyone.session_id
    assert refused.isError and refused.structured["code"] == "permission_denied"
    assert hidden.isError and "disabled for role" in hidden.text
    assert (read.isError, read.text) == (False, "agent")


async def test_tool_rules_hold_on_an_env_mounted_on_mcps_fastmcp():
    app = create_fastmcp_app(Desk(), card=EnvironmentCard(name="desk"))
    with serve_in_thread(app.streamable_http_app()) as running:
        await _rules_hold(running.url + "/mcp")


async def test_tool_rules_hold_on_an_env_mounted_on_standalone_fastmcp():
    app = fastmcp.FastMCP("desk")
    env = Desk()
    env.mount(app)
    await env.update_tool("read", description="Read the desk.")
    listed = {t.name: t for t in await app.list_tools()}
    assert listed["read"].description == "Read the desk."
    assert listed["read"].annotations.readOnlyHint is True and "grade" not in listed
    with serve_in_thread(app.http_app(path="/mcp")) as running:
        await _rules_hold(running.url + "/mcp")


async def test_create_app_is_served_in_memory_by_mcps_client_and_is_its_own_http_app():
    env = Desk()
    app = env.create_app()
    assert app.streamable_http_app() is app
    async with create_connected_server_and_client_session(app) as session:
        names = sorted(t.name for t in (await session.list_tools()).tools)
        written = await session.call_tool("write", {})
    assert names == ["read", "write"] and written.content[0].text == "written"


async def test_update_tool_before_the_env_is_served_says_so():
    with pytest.raises(RuntimeError, match="Desk is not mounted"):
        await Desk().update_tool("read", description="x")


def test_an_app_with_no_request_to_read_the_caller_from_is_refused_before_anything_is_added():
    class Bare:
        def __init__(self) -> None:
            self.added: list = []

        def tool(self, **options):
            return lambda fn: self.added.append(("tool", options)) or fn

        def custom_route(self, path, methods):
            return lambda fn: self.added.append(("route", path)) or fn

    bare = Bare()
    with pytest.raises(RuntimeError, match="tool_access would read an empty caller"):
        AgentEnvFastMCPApplication(EnvironmentCard(name="t"), Desk()).add_routes_to_app(bare)
    assert bare.added == []

    bare.get_context = lambda: None  # a caller to read, but no tools/list to filter
    with pytest.raises(RuntimeError, match="no tool manager to filter tools/list by"):
        AgentEnvFastMCPApplication(EnvironmentCard(name="t"), Desk()).add_routes_to_app(bare)
    assert bare.added == []

    class Open(Desk):
        tool_access = False

    AgentEnvFastMCPApplication(EnvironmentCard(name="t"), Open()).add_routes_to_app(bare)
    assert sorted(o["name"] for kind, o in bare.added if kind == "tool") == [
        "grade",
        "read",
        "write",
    ]
