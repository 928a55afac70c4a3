"""The environment server: one ASGI app serving the card, the data plane, REST extensions,
MCP streamable HTTP (on the `mcp` package's low-level server) and a readiness probe.

Imported lazily (it pulls in starlette, uvicorn and the mcp server); clients never load it.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import mcp.types as mt
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentenv_protocol import errors as E
from agentenv_protocol.authoring import CARD_ATTR, EXT_ATTR, OP_ATTR, TOOL_ATTR
from agentenv_protocol.context import bound, caller_from_request, new_context
from agentenv_protocol.dataplane import OP_METHODS, dispatch
from agentenv_protocol.errors import AgentEnvError
from agentenv_protocol.jsonrpc import error as rpc_error
from agentenv_protocol.mcp_server import mcp_app
from agentenv_protocol.schema import Signature, did_you_mean
from agentenv_protocol.types import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    MCP_PATH,
    MCP_TRANSPORT,
    READY_PATH,
    RPC_PATH,
    WELL_KNOWN_PATH,
    EnvironmentCapabilities,
    EnvironmentCard,
    EnvironmentExtension,
    EnvironmentInterface,
    EnvironmentTool,
    error_body,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
_ENV_NAME_TOKEN = "{environment_name}"


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"request body exceeds the limit of {limit} bytes")
        self.limit = limit


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (without buffering) anything past `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def json_response(body: Any, status: int = 200) -> Response:
    return Response(
        json.dumps(body, default=str), status_code=status, media_type="application/json"
    )


class _ToolEntry:
    __slots__ = ("descriptor", "fn", "sig", "is_async")

    def __init__(self, descriptor: EnvironmentTool, fn: Callable, sig: Signature) -> None:
        self.descriptor, self.fn, self.sig = descriptor, fn, sig
        self.is_async = inspect.iscoroutinefunction(fn)


def _members(handler: Any, attr: str):
    for name in dir(type(handler)):
        if name.startswith("__"):
            continue
        raw = getattr(type(handler), name, None)
        marker = getattr(raw, attr, None)
        if marker is not None:
            yield getattr(handler, name), marker


def tool_result(value: Any) -> mt.CallToolResult:
    """A tool's return value as an MCP result: text as text, JSON-able values as JSON text."""
    if isinstance(value, mt.CallToolResult):
        return value
    if value is None:
        return mt.CallToolResult(content=[])
    if isinstance(value, str):
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=value)])
    if isinstance(value, (mt.TextContent, mt.ImageContent, mt.AudioContent, mt.EmbeddedResource)):
        return mt.CallToolResult(content=[value])
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    text = json.dumps(value, default=str)
    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=text)],
        structuredContent=value if isinstance(value, dict) else None,
    )


def error_result(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], isError=True)


class EnvironmentApp:
    """Reads an environment object's marks once and builds the card, routes and MCP server."""

    def __init__(
        self, handler: Any, *, name: str | None = None, max_request_bytes: int | None = None
    ) -> None:
        self.handler = handler
        config = dict(getattr(type(handler), CARD_ATTR, None) or {})
        card_name = (
            os.environ.get("ENVIRONMENT_NAME")
            or name
            or config.get("name")
            or type(handler).__name__
        )
        self.max_request_bytes = int(
            max_request_bytes
            or os.environ.get("AGENTENV_MAX_REQUEST_BYTES")
            or getattr(handler, "max_request_bytes", DEFAULT_MAX_REQUEST_BYTES)
        )
        self.tools: dict[str, _ToolEntry] = {}
        for fn, marker in _members(handler, TOOL_ATTR):
            tool_name = marker["name"].replace(_ENV_NAME_TOKEN, card_name)
            if "{" in tool_name or "}" in tool_name:
                raise ValueError(
                    f"@tool name {marker['name']!r}: the only placeholder is {_ENV_NAME_TOKEN!r}"
                )
            if tool_name in self.tools:
                raise ValueError(f"two methods are registered as tool {tool_name!r}")
            sig = Signature(fn, label=f"tool {tool_name!r}")
            descriptor = EnvironmentTool(
                name=tool_name, description=marker["description"], inputSchema=sig.schema
            )
            self.tools[tool_name] = _ToolEntry(descriptor, fn, sig)
        self.rpc_handlers: dict[str, Callable] = {}
        for fn, op in _members(handler, OP_ATTR):
            method = OP_METHODS[op]
            if method in self.rpc_handlers:
                raise ValueError(f"two methods are marked @{op}")
            self.rpc_handlers[method] = fn
        self.extensions: list[tuple[EnvironmentExtension, Callable, str, str, Signature]] = []
        seen: set = set()
        for fn, marker in _members(handler, EXT_ATTR):
            path, verb = marker["path"], marker["method"]
            if (path, verb) in seen:
                raise ValueError(f"two extensions serve {verb} {path}")
            seen.add((path, verb))
            sig = Signature(fn, label=f"extension {fn.__name__!r}")
            params = (
                marker["params"]
                if marker["params"] is not None
                else {
                    "endpoint": path,
                    "methods": {fn.__name__: {"method": verb, "request": sig.schema}},
                }
            )
            ext = EnvironmentExtension(
                uri=marker["uri"],
                description=marker["description"],
                params=params,
                required=marker["required"],
            )
            self.extensions.append((ext, fn, path, verb, sig))
        self.card = self._card(config, card_name)

    def _card(self, config: dict, name: str) -> EnvironmentCard:
        card = EnvironmentCard(**{**config, "name": name})
        caps = card.capabilities or EnvironmentCapabilities()
        tools = list(caps.tools or [])
        declared = {t.name for t in tools}
        tools += [t.descriptor for n, t in self.tools.items() if n not in declared]
        exts = list(caps.extensions or [])
        uris = {e.uri for e in exts}
        exts += [e for e, *_ in self.extensions if e.uri not in uris]
        operations = [m for m in OP_METHODS.values() if m in self.rpc_handlers]
        caps = caps.model_copy(
            update={"tools": tools, "extensions": exts or None, "operations": operations}
        )
        interfaces = list(card.additionalInterfaces)
        if not any(i.transport == MCP_TRANSPORT for i in interfaces):
            interfaces.append(EnvironmentInterface(url=MCP_PATH, transport=MCP_TRANSPORT))
        return card.model_copy(update={"capabilities": caps, "additionalInterfaces": interfaces})

    # --- MCP -------------------------------------------------------------------------------
    async def list_tools(self, ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(
            tools=[
                mt.Tool(name=n, description=t.descriptor.description, inputSchema=t.sig.schema)
                for n, t in self.tools.items()
            ]
        )

    async def call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        entry = self.tools.get(params.name)
        if entry is None:
            return error_result(
                f"unknown tool {params.name!r}{did_you_mean(params.name, self.tools)}"
            )
        arguments = params.arguments or {}
        try:
            kwargs = entry.sig.bind(arguments)
        except ValueError as e:
            return error_result(str(e))
        request = getattr(ctx, "request", None)
        caller = caller_from_request(getattr(ctx, "meta", None), getattr(request, "headers", None))
        context = new_context(caller, params.name, arguments, "mcp", mcp=ctx)
        if entry.sig.context_param:
            kwargs[entry.sig.context_param] = context
        with bound(context):
            try:
                value = await entry.fn(**kwargs) if entry.is_async else entry.fn(**kwargs)
                if inspect.isawaitable(value):
                    value = await value
            except AgentEnvError as e:
                return error_result(f"{e.code}: {e.message}")
            except Exception as e:
                log.exception("tool %r failed", params.name)
                return error_result(f"tool {params.name!r} failed: {type(e).__name__}: {e}")
        try:
            return tool_result(value)
        except (TypeError, ValueError) as e:
            return error_result(f"tool {params.name!r} returned a value that is not JSON: {e}")

    # --- HTTP routes -----------------------------------------------------------------------
    async def card_route(self, request: Request) -> Response:
        return json_response(self.card.model_dump(exclude_none=True))

    async def ready_route(self, request: Request) -> Response:
        return json_response({"status": "ready", "name": self.card.name, "tools": len(self.tools)})

    async def rpc_route(self, request: Request) -> Response:
        try:
            body = await read_body(request, self.max_request_bytes)
        except BodyTooLarge as e:
            return json_response(rpc_error(None, E.INVALID_REQUEST, f"invalid request: {e}"), 413)
        return json_response(await dispatch(body, self.rpc_handlers))

    def _ext_route(self, fn: Callable, verb: str, sig: Signature, uri: str) -> Callable:
        async def route(request: Request) -> Response:
            try:
                if verb == "GET":
                    params: Any = dict(request.query_params)
                else:
                    raw = await read_body(request, self.max_request_bytes)
                    params = json.loads(raw) if raw else {}
                    if not isinstance(params, dict):
                        raise ValueError("the request body must be a JSON object")
                kwargs = sig.bind(params)
            except BodyTooLarge as e:
                return json_response(error_body("too_large", str(e)), 413)
            except ValueError as e:
                return json_response(error_body("invalid_params", str(e)), 400)
            caller = caller_from_request(None, request.headers)
            context = new_context(caller, fn.__name__, params, "rest")
            if sig.context_param:
                kwargs[sig.context_param] = context
            with bound(context):
                try:
                    value = fn(**kwargs)
                    if inspect.isawaitable(value):
                        value = await value
                except AgentEnvError as e:
                    return json_response(error_body(e.code, e.message), 400)
                except Exception as e:
                    log.exception("extension %s failed", uri)
                    return json_response(
                        error_body("extension_failed", f"{type(e).__name__}: {e}"), 500
                    )
            return json_response(value if value is not None else {})

        return route

    def routes(self) -> list[Route]:
        routes = [
            Route(WELL_KNOWN_PATH, self.card_route, methods=["GET"]),
            Route(READY_PATH, self.ready_route, methods=["GET"]),
            Route(RPC_PATH, self.rpc_route, methods=["POST"]),
        ]
        for ext, fn, path, verb, sig in self.extensions:
            routes.append(Route(path, self._ext_route(fn, verb, sig, ext.uri), methods=[verb]))
        return routes

    def asgi(self) -> Any:
        return mcp_app(
            self.card.name,
            list_tools=self.list_tools,
            call_tool=self.call_tool,
            routes=self.routes(),
            max_request_bytes=self.max_request_bytes,
        )


class AgentEnvEnvironment:
    """Base class of an environment: decorate it with `@environment_card(...)`, mark methods with
    `@tool` / `@reset_data` / `@add_data` / `@get_data` / `@extension`, then call `serve()`."""

    _agentenv_app: EnvironmentApp | None = None

    def environment_app(self) -> EnvironmentApp:
        if self._agentenv_app is None:
            self._agentenv_app = EnvironmentApp(self)
        return self._agentenv_app

    @property
    def card(self) -> EnvironmentCard:
        return self.environment_app().card

    def create_app(self) -> Any:
        """The ASGI app (card, data plane, extensions, `/mcp`, `/healthz`)."""
        return self.environment_app().asgi()

    def serve(
        self,
        transport: str = "streamable-http",
        *,
        host: str | None = None,
        port: int | None = None,
    ) -> None:
        """Serve on `MCP_HOST`:`MCP_PORT` (default 0.0.0.0:18765) until interrupted."""
        if transport not in ("streamable-http", "http"):
            raise ValueError(
                f"unsupported transport {transport!r}; environments serve 'streamable-http'"
            )
        import uvicorn

        host = host or os.environ.get("MCP_HOST") or DEFAULT_HOST
        port = int(port if port is not None else os.environ.get("MCP_PORT") or DEFAULT_PORT)
        app = self.create_app()
        name = self.environment_app().card.name
        print(f"agentenv: serving {name!r} on http://{host}:{port}", file=sys.stderr, flush=True)
        from agentenv_protocol.serving import uvicorn_options

        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level=os.environ.get("AGENTENV_LOG_LEVEL", "warning"),
            **uvicorn_options(),
        )
