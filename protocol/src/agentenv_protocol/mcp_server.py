"""The env server's `/mcp` endpoint on the `mcp` package (1.x, >= 1.25): a low-level `Server`
whose `tools/list` and `tools/call` go to two callbacks, served as stateless streamable HTTP
that answers JSON (no session, no SSE), next to the env's other starlette routes. The stateless
JSON POSTs that make up nearly all traffic (one notification, or initialize / ping / tools/list /
tools/call) take a fast path over `mcp_methods` (the method layer the gateway answers with too)
that answers exactly as the mcp transport would, without its per-request transport and session;
everything else still goes through the mcp transport.

This is the only module that touches the mcp server API; server.py gives it the callbacks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import mcp.types as mt
import pydantic_core
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import CONTENT_TYPE_JSON, MCP_PROTOCOL_VERSION_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.context import RequestContext
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from agentenv_protocol import errors as E
from agentenv_protocol import jsonrpc, mcp_methods
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


_REQUESTS: dict[str, type[mt.Request]] = {
    "initialize": mt.InitializeRequest,
    "ping": mt.PingRequest,
    "tools/list": mt.ListToolsRequest,
    "tools/call": mt.CallToolRequest,
}


def _headers(scope: Any) -> dict[bytes, str]:
    """The request headers by lowercased name (the first of repeated ones, as starlette reads)."""
    out: dict[bytes, str] = {}
    for key, value in scope.get("headers") or ():
        out.setdefault(key.lower(), value.decode("latin-1"))
    return out


def _accepts_json(accept: str) -> bool:
    return any(t.strip().startswith(CONTENT_TYPE_JSON) for t in accept.split(","))


def _is_json(content_type: str) -> bool:
    return any(p.strip() == CONTENT_TYPE_JSON for p in content_type.split(";")[0].split(","))


@dataclasses.dataclass(frozen=True)
class _Incoming:
    """What the fast path's handlers get besides the params: the id, the validated mcp request
    and the HTTP request (the tool context reads its headers)."""

    rid: Any
    request: Any
    http: Request


class _FastPath:
    """Answers the stateless JSON POSTs the mcp transport would (one JSON-RPC message: a
    notification, or `initialize` / `ping` / `tools/list` / `tools/call` that mcp's own models
    accept) without building a transport and server session per request; `answer` returns
    False for everything else, which the mcp transport then answers.

    Mirrors mcp 1.x's streamable HTTP POST checks in its order: Accept has application/json
    (else 406), Content-Type is application/json (else 415), the body is JSON (else 400) and
    one JSON-RPC message (else 400), `mcp-protocol-version` (when sent, on all but `initialize`)
    is supported (else 400); then notifications get 202 and requests are validated against the
    method's mcp request model (else -32602)."""

    def __init__(self, server: Server, list_tools: ListTools, call_tool: CallTool) -> None:
        options = server.create_initialization_options()
        info = mt.Implementation(
            name=options.server_name,
            version=options.server_version,
            websiteUrl=options.website_url,
            icons=options.icons,
        )
        self.list_tools, self.call_tool = list_tools, call_tool
        self.known_methods = _client_request_methods()
        self.methods = mcp_methods.dispatcher(
            versions=SUPPORTED_PROTOCOL_VERSIONS,
            capabilities=options.capabilities.model_dump(
                by_alias=True, mode="json", exclude_none=True
            ),
            server_info=info.model_dump(by_alias=True, mode="json", exclude_none=True),
            list_tools=self._list,
            call_tool=self._call,
        )

    @staticmethod
    def _context(incoming: _Incoming) -> RequestContext:
        params = incoming.request.params
        meta = params.meta if params is not None else None
        return RequestContext(
            request_id=incoming.rid,
            meta=meta.model_dump(by_alias=True, exclude_none=True) if meta is not None else None,
            session=None,
            lifespan_context=None,
            request=incoming.http,
        )

    @staticmethod
    def _dump(value: Any) -> dict:
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _list(self, params: dict, incoming: _Incoming) -> dict:
        try:
            return self._dump(
                await self.list_tools(self._context(incoming), incoming.request.params)
            )
        except Exception as e:  # the mcp server answers a failed handler with code 0
            raise jsonrpc.Fault(0, str(e)) from e

    async def _call(self, params: dict, incoming: _Incoming) -> dict:
        try:
            return self._dump(
                await self.call_tool(self._context(incoming), incoming.request.params)
            )
        except Exception as e:
            raise jsonrpc.Fault(0, str(e)) from e

    async def answer(self, scope: Any, body: bytes, send: Any) -> bool:
        headers = _headers(scope)
        if not _accepts_json(headers.get(b"accept", "")) or not _is_json(
            headers.get(b"content-type", "")
        ):
            return False
        try:
            req = json.loads(body)
        except ValueError:
            return False
        if (
            not isinstance(req, dict)
            or req.get("jsonrpc") != "2.0"
            or not isinstance(req.get("method"), str)
            or "result" in req
            or "error" in req
            or not isinstance(req.get("params"), dict | None)
        ):
            return False
        method, rid = req["method"], req.get("id")
        if "id" in req and (rid is None or not jsonrpc.valid_id(rid)):
            # mcp would take it for a notification and answer 202: refuse it as JSON-RPC says
            message = "invalid request: 'id' must be a string or a number"
            await respond(send, 400, rpc_error(None, E.INVALID_REQUEST, message))
            return True
        is_request = type(rid) in (int, str)
        if "id" in req and not is_request:
            return False
        if is_request and self.known_methods and method not in self.known_methods:
            answer = rpc_error(rid, E.METHOD_NOT_FOUND, f"method not found: {method!r}")
            await respond(send, 200, answer)
            return True
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER.encode())
        checks_version = not (is_request and method == "initialize")
        if checks_version and version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            return False
        if not is_request:
            await mcp_methods.accepted(send)
            return True
        model = _REQUESTS.get(method)
        if model is None:
            return False
        params = req.get("params")
        try:
            request = model.model_validate(
                {"method": method} if params is None else {"method": method, "params": params}
            )
        except ValidationError:
            return False
        incoming = _Incoming(rid, request, Request(scope))
        answer = await self.methods.dispatch(
            {"id": rid, "method": method, "params": params or {}}, incoming
        )
        await respond(send, 200, pydantic_core.to_json(answer))  # the bytes mcp's models write
        return True


def _client_request_methods() -> frozenset[str]:
    """Every request method mcp's `ClientRequest` union knows (empty if its shape changed, which
    leaves unknown methods to the mcp transport)."""
    try:
        union = mt.ClientRequest.model_fields["root"].annotation
        return frozenset(
            arg
            for member in typing.get_args(union)
            for arg in typing.get_args(member.model_fields["method"].annotation)
        )
    except (AttributeError, KeyError, TypeError):
        return frozenset()


class _Endpoint:
    """`/mcp`: bounds the body (413 past `limit`), answers what the fast path can, and hands
    the rest (GET, DELETE, batches, errors) to the mcp transport. A class instance, so
    starlette routes raw ASGI to it."""

    def __init__(
        self, manager: StreamableHTTPSessionManager, limit: int, fast: _FastPath | None
    ) -> None:
        self.manager, self.limit, self.fast = manager, limit, fast

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("method") != "POST":
            await self.manager.handle_request(scope, receive, send)
            return
        body = await read_body(receive, self.limit, scope)
        if body is None:
            message = f"invalid request: the body exceeds the limit of {self.limit} bytes"
            await respond(send, 413, rpc_error(None, E.INVALID_REQUEST, message))
            return
        if jsonrpc.too_deep(body):
            message = f"parse error: the JSON nests deeper than {jsonrpc.MAX_JSON_DEPTH} levels"
            await respond(send, 400, rpc_error(None, E.PARSE_ERROR, message))
            return
        if self.fast is not None and await self.fast.answer(scope, body, send):
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
    fast: bool = True,
) -> Starlette:
    """A starlette app serving MCP at `MCP_PATH` plus `routes`. `fast=False` sends every
    request through the mcp transport (the tests compare both paths' answers)."""
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
    fast_path = _FastPath(server, list_tools, call_tool) if fast else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app = Starlette(
        routes=[
            Route(MCP_PATH, endpoint=_Endpoint(manager, max_request_bytes, fast_path)),
            *routes,
        ],
        lifespan=lifespan,
    )
    app.state.mcp_server = server
    return app


class EnvironmentASGI:
    """What `AgentEnvEnvironment.create_app()` returns: the env's ASGI app (`asgi`, maybe
    behind the gateway-only guard), to serve or call as is. It also answers what code written
    for the existing SDK calls on the FastMCP app its `create_app()` returned:
    `streamable_http_app()` gives this ASGI app, and mcp's in-memory
    `create_connected_server_and_client_session(app)` runs the env's own MCP server (through
    `run` and `create_initialization_options`, the low-level server's). Other attributes are the
    Starlette app's (`router`, `state`, ...)."""

    def __init__(self, asgi: Any, starlette: Starlette) -> None:
        self.asgi = asgi
        self._starlette = starlette

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.asgi(scope, receive, send)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._starlette, name)

    def streamable_http_app(self) -> EnvironmentASGI:
        return self

    def create_initialization_options(self, *args: Any, **kwargs: Any) -> Any:
        return self._starlette.state.mcp_server.create_initialization_options(*args, **kwargs)

    async def run(self, read_stream: Any, write_stream: Any, options: Any, **kwargs: Any) -> None:
        """Serve MCP on a pair of memory streams (the low-level `Server.run`)."""
        await self._starlette.state.mcp_server.run(read_stream, write_stream, options, **kwargs)
