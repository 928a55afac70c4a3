"""The peer tools' MCP endpoint (see peer_agents.py): stateless JSON-RPC over one POST, on the
method layer our env server and gateway answer MCP with (`mcp_methods`). It answers loopback
callers only (403 otherwise) and only while the application's lifespan runs (503 before).
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from starlette.routing import Route

from agentenv_protocol import jsonrpc, mcp_methods
from agentenv_protocol.a2a_agent.peer_agents import (
    _DEFAULT_WAIT_SECONDS,
    PEER_MCP_PATH,
    PEER_MCP_SERVER_NAME,
    PeerAgents,
    PeerError,
    _peers_of,
)
from agentenv_protocol.asgi import read_body, respond
from agentenv_protocol.mcp_http import HANDSHAKE_VERSIONS

_MAX_REQUEST_BYTES = 4 << 20
_STOP_ON_INPUT = (
    " When the state is input-required the peer is waiting on you: stop polling and answer it"
    " with peer_send_message in the same context_id."
)
_NAME = {"type": "string", "description": "The peer's name, as peer_list gives it."}
_TASK_ID = {"type": "string", "description": "A task_id peer_send_message or peer_start_task gave."}
_MESSAGE = {
    "name": _NAME,
    "prompt": {"type": "string", "description": "The text to send."},
    "parts": {
        "type": "array",
        "items": {"type": "object"},
        "description": "A2A parts to send after the prompt ({kind: text|data|file, ...}).",
    },
    "context_id": {
        "type": "string",
        "description": "Continue the conversation a previous answer's context_id names.",
    },
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


TOOLS: list[dict[str, Any]] = [
    {
        "name": "peer_list",
        "description": "List the peer agents of this task: name, description, url.",
        "inputSchema": _schema({}, []),
    },
    {
        "name": "peer_get_card",
        "description": "A peer's A2A agent card (its skills and capabilities).",
        "inputSchema": _schema({"name": _NAME}, ["name"]),
    },
    {
        "name": "peer_send_message",
        "description": "Send a peer a message and wait for its answer (state, response, parts);"
        " a peer still working when the wait ends leaves its task_id to read with peer_get_task."
        + _STOP_ON_INPUT,
        "inputSchema": _schema(
            {
                **_MESSAGE,
                "timeout_seconds": {
                    "type": "number",
                    "default": _DEFAULT_WAIT_SECONDS,
                    "description": "How long to wait for the answer, capped at 50 seconds.",
                },
            },
            ["name"],
        ),
    },
    {
        "name": "peer_start_task",
        "description": "Start a task on a peer and return at once with its task_id; read it"
        " later with peer_get_task." + _STOP_ON_INPUT,
        "inputSchema": _schema(_MESSAGE, ["name"]),
    },
    {
        "name": "peer_get_task",
        "description": "A peer task's state, and its response once it is done." + _STOP_ON_INPUT,
        "inputSchema": _schema(
            {
                "task_id": _TASK_ID,
                "history_length": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Also return this many of the task's latest messages.",
                },
            },
            ["task_id"],
        ),
    },
    {
        "name": "peer_cancel_task",
        "description": "Cancel a peer's task.",
        "inputSchema": _schema({"task_id": _TASK_ID}, ["task_id"]),
    },
]
_BY_NAME = {tool["name"]: tool for tool in TOOLS}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "array": (list,),
}


def check_arguments(tool: str, arguments: Any) -> dict[str, Any]:
    """`arguments` when they fit the tool's schema; PeerError naming what does not."""
    schema = _BY_NAME[tool]["inputSchema"]
    if not isinstance(arguments, dict):
        raise PeerError(f"{tool}: arguments must be an object")
    properties = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise PeerError(f"{tool}: unknown argument(s) {unknown}; it takes {sorted(properties)}")
    for name in schema["required"]:
        if arguments.get(name) is None:
            raise PeerError(f"{tool}: {name!r} is required")
    for name, value in arguments.items():
        expected = properties[name]["type"]
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, _JSON_TYPES[expected])
        ):
            raise PeerError(f"{tool}: {name!r} must be a {expected}")
    return {name: value for name, value in arguments.items() if value is not None}


def _loopback(scope: Any) -> bool:
    client = scope.get("client")
    try:
        return bool(client) and ipaddress.ip_address(client[0]).is_loopback
    except ValueError:
        return False


def routes(peers: PeerAgents) -> list[Route]:
    """The route serving `peers`' tools at `PEER_MCP_PATH`."""

    async def tools_list(params: dict, *context: Any) -> dict:
        return {"tools": TOOLS}

    async def tools_call(params: dict, *context: Any) -> dict:
        tool = params.get("name")
        try:
            if not isinstance(tool, str) or tool not in _BY_NAME:
                raise PeerError(f"unknown tool {tool!r}. Tools: {', '.join(_BY_NAME)}")
            arguments = check_arguments(tool, params.get("arguments") or {})
            value = await peers.call(tool, arguments)
        except PeerError as e:
            return {"content": [{"type": "text", "text": str(e)}], "isError": True}
        text = json.dumps(value, ensure_ascii=False)
        return {"content": [{"type": "text", "text": text}], "isError": False}

    methods = mcp_methods.dispatcher(
        versions=HANDSHAKE_VERSIONS,
        capabilities=mcp_methods.TOOLS_CAPABILITIES,
        server_info={"name": PEER_MCP_SERVER_NAME, "version": "1"},
        list_tools=tools_list,
        call_tool=tools_call,
        lenient_params=True,
    )

    async def endpoint(scope: Any, receive: Any, send: Any) -> None:
        """A plain ASGI app (starlette hands it the raw request)."""
        if not peers.live:
            await respond(send, 503, {"error": "the peer tools answer once the agent has started"})
            return
        if not _loopback(scope):
            await respond(send, 403, {"error": "the peer tools answer loopback callers only"})
            return
        if scope["method"] != "POST":
            await respond(send, 405, {"error": "the peer tools take MCP over POST"})
            return
        body = await read_body(receive, _MAX_REQUEST_BYTES, scope)
        if body is None:
            message = f"request body exceeds {_MAX_REQUEST_BYTES} bytes"
            await respond(send, 413, jsonrpc.error(None, jsonrpc.INVALID_REQUEST, message))
            return
        request, error = jsonrpc.parse_request(body)
        if request is None or error is not None:
            await respond(send, 400, error)
            return
        if mcp_methods.is_notification(request):
            await mcp_methods.accepted(send)
            return
        await respond(send, 200, await methods.dispatch(request))

    return [Route(PEER_MCP_PATH, _Asgi(endpoint), methods=["GET", "POST", "DELETE"])]


class _Asgi:
    """Marks a function as an ASGI app for starlette's `Route` (which would wrap a function)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def a2a_service(application: Any) -> Any:
    """The SDK's peer tools (`services.py`) for an agent that turns peer-agents/v1 on without
    handlers of its own (None otherwise): their route, live during the app's lifespan, and the
    task MCP server `peer_agents` on the port each request comes in on."""
    from agentenv_protocol.a2a_agent.services import Service
    from agentenv_protocol.agent.extensions import PEER_AGENTS_URI
    from agentenv_protocol.agent.types import DEFAULT_AGENT_PORT
    from agentenv_protocol.transfers import serving_port

    registered = application.registry.get(PEER_AGENTS_URI)
    if registered is None or any(op.method_name for op in registered.operations):
        return None
    peers = _peers_of(application.runtime)
    peers.servers = application.runtime.mcp_servers
    peers.note_port(serving_port() or DEFAULT_AGENT_PORT)
    return Service(
        name="peer-agents tools",
        routes=tuple(routes(peers)),
        prefix=PEER_MCP_PATH,
        lifespan=lambda app: peers.running(),
        on_port=peers.note_port,
    )
