"""The env server's `/mcp` fast path answers exactly as the mcp 1.x transport does.

Two real servers (uvicorn in a thread) serve the same tool callbacks: one with the fast path, one
with `fast=False` (every request through mcp's StreamableHTTPSessionManager). Each raw request
goes to both; status, content type, session header and body (byte for byte) must match, and a counter on
the fast server's mcp transport shows which path answered. The checks mirror mcp 1.30's
streamable HTTP POST handling (server/streamable_http.py `_handle_post_request`) and its server
session (`_receive_loop`, `_received_request`), item by item.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import mcp.types as mt
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentenv_protocol.examples.echo import EchoEnv
from agentenv_protocol.mcp_server import mcp_app
from agentenv_protocol.serving import serve_in_thread

LIMIT = 64 * 1024
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
RICH_TOOL = {
    "name": "rich",
    "title": "Rich",
    "description": "a tool descriptor with every optional member",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "annotations": {"readOnlyHint": True, "title": "rich tool"},
    "_meta": {"example.com/tag": "x"},
}


def callbacks() -> tuple[Any, Any]:
    """The echo example's real callbacks, plus tools whose results use the optional members."""
    env = EchoEnv().environment_app()

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        listed = await env.list_tools(ctx, params)
        return mt.ListToolsResult(tools=[*listed.tools, mt.Tool.model_validate(RICH_TOOL)])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        if params.name == "rich":
            return mt.CallToolResult.model_validate(
                {
                    "content": [{"type": "text", "text": "é ☃", "annotations": {"priority": 1}}],
                    "structuredContent": {"n": 3},
                    "isError": False,
                    "_meta": {"example.com/cost": 1},
                }
            )
        if params.name == "floats":  # serialized as the mcp transport does, NaN as null
            value = {"small": 1e-7, "big": 1e300, "nan": float("nan"), "inf": float("inf")}
            return mt.CallToolResult(content=[], structuredContent=value)
        if params.name == "context":  # what the callback sees of the request
            headers = ctx.request.headers if ctx.request is not None else {}
            seen = {"id": ctx.request_id, "meta": ctx.meta, "role": headers.get("agentenv-role")}
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=json.dumps(seen))])
        if params.name == "explode":  # a callback that raises: the mcp server answers code 0
            raise RuntimeError("callback exploded")
        return await env.call_tool(ctx, params)

    return list_tools, call_tool


@pytest.fixture(scope="module")
def servers():
    list_tools, call_tool = callbacks()
    apps = {
        flag: mcp_app(
            "echo",
            list_tools=list_tools,
            call_tool=call_tool,
            max_request_bytes=LIMIT,
            fast=flag,
        )
        for flag in (True, False)
    }
    endpoint = apps[True].routes[0].app  # type: ignore[attr-defined]
    handle = endpoint.manager.handle_request
    counter = {"library": 0}

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        counter["library"] += 1
        await handle(scope, receive, send)

    endpoint.manager.handle_request = counted
    running = {flag: serve_in_thread(app) for flag, app in apps.items()}
    yield {"fast": running[True].url, "library": running[False].url, "counter": counter}
    for server in running.values():
        server.stop()


def wire(response: httpx.Response) -> tuple:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.content
    return (
        response.status_code,
        response.headers.get("content-type"),
        response.headers.get("mcp-session-id"),
        body,
        response.content,
    )


def both(servers, body: Any, headers: dict | None = None, method: str = "POST") -> tuple:
    """(fast server's wire answer, library server's wire answer, path the fast server took)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = JSON_HEADERS if headers is None else headers
    before = servers["counter"]["library"]
    answers = [
        wire(
            httpx.request(method, servers[k] + "/mcp", content=content, headers=headers, timeout=30)
        )
        for k in ("fast", "library")
    ]
    path = "library" if servers["counter"]["library"] > before else "fast"
    return answers[0], answers[1], path


def req(method: str, params: Any = None, rid: Any = 1, **extra: Any) -> dict:
    body: dict = {"jsonrpc": "2.0", "id": rid, "method": method, **extra}
    if params is not None:
        body["params"] = params
    return body


INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}

# (case id, body, extra headers or None for the JSON defaults, the path that must answer)
CASES = [
    # Accept: application/json required in JSON response mode (406 otherwise)
    ("accept-missing", req("ping"), {"content-type": "application/json"}, "library"),
    ("accept-sse-only", req("ping"), {**JSON_HEADERS, "accept": "text/event-stream"}, "library"),
    (
        "accept-json-with-q",
        req("ping"),
        {**JSON_HEADERS, "accept": "application/json;q=0.9"},
        "fast",
    ),
    ("accept-wildcard", req("ping"), {**JSON_HEADERS, "accept": "*/*"}, "library"),
    # Content-Type: application/json required (415 otherwise)
    ("content-type-text", req("ping"), {**JSON_HEADERS, "content-type": "text/plain"}, "library"),
    ("content-type-missing", req("ping"), {"accept": "application/json"}, "library"),
    (
        "content-type-charset",
        req("ping"),
        {**JSON_HEADERS, "content-type": "application/json; charset=utf-8"},
        "fast",
    ),
    # the body: JSON (400 -32700), one JSON-RPC message (400 -32602 validation error)
    ("malformed-json", b'{"jsonrpc": "2.0", "id": 1,', None, "library"),
    ("empty-body", b"", None, "library"),
    ("batch", [req("ping")], None, "library"),
    ("not-an-object", b'"ping"', None, "library"),
    ("jsonrpc-1.0", {**req("ping"), "jsonrpc": "1.0"}, None, "library"),
    ("method-not-a-string", {**req("ping"), "method": 5}, None, "library"),
    ("params-an-array", req("ping", [1]), None, "library"),
    ("response-message", {"jsonrpc": "2.0", "id": 1, "result": {}}, None, "library"),
    ("request-with-result-member", req("ping", result={}), None, "library"),
    ("request-with-error-member", req("ping", error={"code": 1, "message": "m"}), None, "library"),
    # ids: a string or an integer is a request; null, bool, float or object ids are not
    ("id-string", req("ping", rid="abc"), None, "fast"),
    ("id-large-int", req("ping", rid=2**60), None, "fast"),
    ("id-float", req("tools/list", rid=1.5), None, "library"),
    # mcp-protocol-version: checked (when sent) on all but initialize requests
    (
        "version-unsupported",
        req("tools/list"),
        {**JSON_HEADERS, "mcp-protocol-version": "2026-07-28"},
        "library",
    ),
    (
        "version-supported",
        req("tools/list"),
        {**JSON_HEADERS, "mcp-protocol-version": "2024-11-05"},
        "fast",
    ),
    (
        "version-on-initialize",
        req("initialize", INIT),
        {**JSON_HEADERS, "mcp-protocol-version": "1999-01-01"},
        "fast",
    ),
    (
        "version-on-notification",
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {**JSON_HEADERS, "mcp-protocol-version": "1999-01-01"},
        "library",
    ),
    # notifications: 202, no body
    (
        "notification-initialized",
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        None,
        "fast",
    ),
    (
        "notification-unknown",
        {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}},
        None,
        "fast",
    ),
    (
        "notification-cancelled",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
        None,
        "fast",
    ),
    (
        "notification-array-params",
        {"jsonrpc": "2.0", "method": "notifications/x", "params": [1]},
        None,
        "library",
    ),
    # initialize: the asked version when supported, else the newest; params validated
    ("initialize-supported", req("initialize", INIT), None, "fast"),
    (
        "initialize-oldest",
        req("initialize", {**INIT, "protocolVersion": "2024-11-05"}),
        None,
        "fast",
    ),
    (
        "initialize-unknown-version",
        req("initialize", {**INIT, "protocolVersion": "1999-01-01"}),
        None,
        "fast",
    ),
    ("initialize-int-version", req("initialize", {**INIT, "protocolVersion": 3}), None, "fast"),
    (
        "initialize-no-client-info",
        req("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
        None,
        "library",
    ),
    ("initialize-no-params", req("initialize"), None, "library"),
    # ping
    ("ping", req("ping"), None, "fast"),
    ("ping-null-params", {**req("ping"), "params": None}, None, "fast"),
    ("ping-extra-member", req("ping", foo=1), None, "fast"),
    ("ping-meta", req("ping", {"_meta": {"progressToken": 1}}), None, "fast"),
    # tools/list
    ("tools-list", req("tools/list"), None, "fast"),
    ("tools-list-cursor", req("tools/list", {"cursor": "next"}), None, "fast"),
    ("tools-list-bad-cursor", req("tools/list", {"cursor": 5}), None, "library"),
    # tools/call: the callbacks' results, camelCase members, invalid params
    ("call-echo", req("tools/call", {"name": "echo", "arguments": {"text": "hi"}}), None, "fast"),
    (
        "call-structured",
        req("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
        None,
        "fast",
    ),
    ("call-rich", req("tools/call", {"name": "rich", "arguments": {}}), None, "fast"),
    ("call-floats", req("tools/call", {"name": "floats"}), None, "fast"),
    ("call-agentenv-error", req("tools/call", {"name": "fail", "arguments": {}}), None, "fast"),
    ("call-unknown-tool", req("tools/call", {"name": "ecko", "arguments": {}}), None, "fast"),
    (
        "call-bad-arguments",
        req("tools/call", {"name": "add", "arguments": {"a": "x"}}),
        None,
        "fast",
    ),
    (
        "call-null-argument",
        req("tools/call", {"name": "echo", "arguments": {"text": None}}),
        None,
        "fast",
    ),
    ("call-no-arguments", req("tools/call", {"name": "echo"}), None, "fast"),
    ("call-callback-raises", req("tools/call", {"name": "explode"}), None, "fast"),
    (
        "call-context",
        req(
            "tools/call",
            {"name": "context", "_meta": {"agentenv.io/role": "admin", "progressToken": "p"}},
            rid="c1",
        ),
        {**JSON_HEADERS, "agentenv-role": "user"},
        "fast",
    ),
    (
        "call-whoami-meta",
        req("tools/call", {"name": "whoami", "_meta": {"agentenv.io/role": "admin"}}),
        None,
        "fast",
    ),
    ("call-no-params", req("tools/call"), None, "library"),
    ("call-name-not-string", req("tools/call", {"name": 5}), None, "library"),
    (
        "call-arguments-array",
        req("tools/call", {"name": "echo", "arguments": [1]}),
        None,
        "library",
    ),
    # other methods: unknown ones fail mcp's request validation (-32602), known unserved -32601
    ("method-not-served", req("resources/list"), None, "library"),
]


@pytest.mark.parametrize(
    ("body", "headers", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_fast_path_answers_like_the_mcp_transport(servers, body, headers, path):
    fast, library, took = both(servers, body, headers)
    assert fast == library
    assert took == path, f"answered by the {took} path"


# Where the mcp transport departs from JSON-RPC 2.0, the fast path answers as JSON-RPC says:
# an id that is null, a bool or an object is an invalid request (mcp takes it for a
# notification and answers 202), a method mcp does not know is -32601 (mcp: -32602).
DEVIATIONS = [
    ("id-null", req("ping", rid=None), 400, -32600),
    ("id-bool", req("tools/list", rid=True), 400, -32600),
    ("id-object", req("tools/list", rid={"a": 1}), 400, -32600),
    ("id-nan", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', 400, -32600),
    ("method-unknown", req("foo/bar"), 200, -32601),
    ("method-discover", req("server/discover"), 200, -32601),
]


@pytest.mark.parametrize(
    ("body", "status", "code"), [c[1:] for c in DEVIATIONS], ids=[c[0] for c in DEVIATIONS]
)
def test_fast_path_answers_per_json_rpc_where_mcp_departs(servers, body, status, code):
    fast, library, took = both(servers, body)
    assert took == "fast" and fast[0] == status and fast[3]["error"]["code"] == code
    assert library != fast  # the deviation is real: the transport answers otherwise


def test_the_answers_have_the_expected_shapes(servers):
    """The comparison above is not vacuous: the fast path's answers carry the mcp shapes."""
    fast, _, took = both(servers, req("tools/list"))
    assert took == "fast" and fast[0] == 200
    rich = fast[3]["result"]["tools"][-1]
    assert rich == RICH_TOOL
    assert {"name", "description", "inputSchema"} <= set(fast[3]["result"]["tools"][0])
    fast, _, _ = both(servers, req("tools/call", {"name": "rich"}))
    assert fast[3]["result"] == {
        "content": [{"type": "text", "text": "é ☃", "annotations": {"priority": 1}}],
        "structuredContent": {"n": 3},
        "isError": False,
        "_meta": {"example.com/cost": 1},
    }
    fast, _, _ = both(servers, req("tools/call", {"name": "fail"}))
    assert fast[3]["result"]["isError"] is True
    fast, _, _ = both(servers, req("initialize", {**INIT, "protocolVersion": "1999-01-01"}))
    assert fast[3]["result"]["protocolVersion"] == mt.LATEST_PROTOCOL_VERSION
    fast, _, _ = both(servers, req("tools/call", {"name": "explode"}))
    assert fast[3]["error"] == {"code": 0, "message": "callback exploded"}
    fast, _, _ = both(servers, req("tools/call", {"name": "context", "_meta": {"a": 1}}, rid=9))
    seen = json.loads(fast[3]["result"]["content"][0]["text"])
    assert seen == {"id": 9, "meta": {"a": 1}, "role": None}


def test_oversize_bodies_get_413_on_both_paths_and_the_server_keeps_serving(servers):
    big = req("tools/call", {"name": "echo", "arguments": {"text": "x" * LIMIT}})
    fast, library, took = both(servers, big)
    assert fast == library and fast[0] == 413 and fast[3]["error"]["code"] == -32600
    assert took == "fast"  # refused before either path
    assert both(servers, req("ping"))[0][0] == 200


def test_the_gateway_and_the_env_server_negotiate_the_same_versions():
    """The gateway (no mcp import) lists the versions itself; they must be mcp's."""
    from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS

    from agentenv_protocol.mcp_http import HANDSHAKE_VERSIONS

    assert list(HANDSHAKE_VERSIONS) == list(SUPPORTED_PROTOCOL_VERSIONS)


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_other_http_methods_go_to_the_mcp_transport(servers, method):
    fast, library, took = both(servers, b"", {"accept": "application/json"}, method=method)
    assert fast == library and took == "library"


@pytest.mark.anyio
async def test_the_official_mcp_client_sees_the_same_on_both_paths(servers):
    """mcp 1.x's own client: handshake, listing and calls read the same on both servers."""
    seen = {}
    for path in ("fast", "library"):
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http,
            streamable_http_client(servers[path] + "/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            tools = await session.list_tools()
            calls = [
                await session.call_tool(name, arguments)
                for name, arguments in [
                    ("echo", {"text": "hi"}),
                    ("add", {"a": 1, "b": 2}),
                    ("rich", {}),
                    ("fail", {}),
                    ("nope", {}),
                ]
            ]
            await session.send_ping()
            seen[path] = [init.model_dump(), tools.model_dump(), [c.model_dump() for c in calls]]
    assert seen["fast"] == seen["library"]
    assert seen["fast"][2][1]["structuredContent"] == {"sum": 3}
    assert seen["fast"][2][3]["isError"] is True
