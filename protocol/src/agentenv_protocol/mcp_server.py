"""The env server's `/mcp` endpoint on the `mcp` package (1.x, >= 1.25): a low-level `Server`
whose `tools/list` and `tools/call` go to two callbacks, served as stateless streamable HTTP
that answers JSON (no session, no SSE), next to the env's other starlette routes.

This is the only module that touches the mcp server API; server.py gives it the callbacks.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from agentenv_protocol import errors as E
from agentenv_protocol.asgi import read_body, respond
from agentenv_protocol.jsonrpc import error as rpc_error
from agentenv_protocol.types import MCP_PATH

ListTools = Callable[[Any, Any], Awaitable[mt.ListToolsResult]]
CallTool = Callable[[Any, mt.CallToolRequestParams], Awaitable[mt.CallToolResult]]


def _context(server: Server) -> Any:
    """The mcp request context, with `meta` as a plain dict (the request's `_meta` entries)."""
    ctx = server.request_context
    meta = ctx.meta.model_dump(by_alias=True, exclude_none=True) if ctx.meta is not None else None
    return dataclasses.replace(ctx, meta=meta)  # type: ignore[arg-type]


class _Endpoint:
    """`/mcp`: bounds the body (413 past `limit`), then hands the request to the mcp transport.
    A class instance, so starlette routes raw ASGI to it."""

    def __init__(self, manager: StreamableHTTPSessionManager, limit: int) -> None:
        self.manager, self.limit = manager, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("method") != "POST":
            await self.manager.handle_request(scope, receive, send)
            return
        body = await read_body(receive, self.limit)
        if body is None:
            message = f"invalid request: the body exceeds the limit of {self.limit} bytes"
            await respond(send, 413, rpc_error(None, E.INVALID_REQUEST, message))
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.manager.handle_request(scope, replay, send)


def mcp_app(
    name: str,
    *,
    list_tools: ListTools,
    call_tool: CallTool,
    routes: Sequence[BaseRoute] = (),
    max_request_bytes: int,
) -> Starlette:
    """A starlette app serving MCP at `MCP_PATH` plus `routes`."""
    server: Server = Server(name, version="1")

    async def on_list_tools(request: mt.ListToolsRequest) -> mt.ServerResult:
        return mt.ServerResult(await list_tools(_context(server), request.params))

    async def on_call_tool(request: mt.CallToolRequest) -> mt.ServerResult:
        return mt.ServerResult(await call_tool(_context(server), request.params))

    server.request_handlers[mt.ListToolsRequest] = on_list_tools
    server.request_handlers[mt.CallToolRequest] = on_call_tool
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(
        routes=[Route(MCP_PATH, endpoint=_Endpoint(manager, max_request_bytes)), *routes],
        lifespan=lifespan,
    )
