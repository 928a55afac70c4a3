"""MCP's method layer, written once for both of our MCP servers (the env server's `/mcp` fast path
and the gateway's `/mcp`): the `initialize` handshake with protocol version negotiation, `ping`,
`tools/list` and `tools/call` handed to two callbacks, and notifications (accepted with 202, no
answer). Plain JSON-RPC over `agentenv_protocol.jsonrpc`; no mcp package.

Each server passes its own protocol versions, capabilities and server info, and its callbacks
receive the params plus whatever context the server dispatches with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentenv_protocol import jsonrpc

TOOLS_CAPABILITIES: dict = {"tools": {"listChanged": False}}
METHODS = ("initialize", "ping", "tools/list", "tools/call")

ToolsCallback = Callable[..., Awaitable[dict]]


def negotiate(asked: Any, supported: Sequence[str]) -> str:
    """The version `initialize` answers with: the client's when supported, else the newest."""
    return asked if asked in supported else supported[-1]


def is_notification(req: dict) -> bool:
    """A parsed JSON-RPC message without an id: it gets 202 and no answer."""
    return "id" not in req


async def accepted(send: Any) -> None:
    """The 202 (empty JSON body) that answers a notification."""
    headers = [(b"content-type", b"application/json"), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 202, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def dispatcher(
    *,
    versions: Sequence[str],
    capabilities: dict,
    server_info: dict,
    list_tools: ToolsCallback,
    call_tool: ToolsCallback,
    not_found: Callable[[str], str] | None = None,
    lenient_params: bool = False,
) -> jsonrpc.Dispatcher:
    """A dispatcher for `METHODS`; `list_tools` / `call_tool` get `(params, *context)` (the context
    the server dispatches with) and return the result object. Add more methods with `.add`."""

    async def initialize(params: dict, *context: Any) -> dict:
        return {
            "protocolVersion": negotiate(params.get("protocolVersion"), versions),
            "capabilities": capabilities,
            "serverInfo": server_info,
        }

    async def ping(params: dict, *context: Any) -> dict:
        return {}

    return jsonrpc.Dispatcher(
        {
            "initialize": initialize,
            "ping": ping,
            "tools/list": list_tools,
            "tools/call": call_tool,
        },
        not_found=not_found,
        lenient_params=lenient_params,
    )
