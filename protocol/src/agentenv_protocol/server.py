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
from agentenv_protocol.authoring import CARD_ATTR
from agentenv_protocol.context import Caller, bound, caller_from_request, new_context
from agentenv_protocol.dataplane import dispatch
from agentenv_protocol.errors import AgentEnvError
from agentenv_protocol.jsonrpc import error as rpc_error
from agentenv_protocol.jsonrpc import loads
from agentenv_protocol.mcp_server import EnvironmentASGI, mcp_app
from agentenv_protocol.surface import EnvironmentHooks, ServedExtension, ServedTool, read_surface
from agentenv_protocol.types import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    READY_PATH,
    RPC_PATH,
    WELL_KNOWN_PATH,
    EnvironmentCard,
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


def _wire(cls: Any, value: dict) -> Any:
    """An mcp type from its wire dict (camelCase keys validate on mcp 1.x and 2.x alike)."""
    return cls.model_validate(value)


def _caller(ctx: Any) -> Caller:
    request = getattr(ctx, "request", None)
    return caller_from_request(getattr(ctx, "meta", None), getattr(request, "headers", None))


def _ext_error(error: AgentEnvError) -> Response:
    return json_response(error_body(**error.fields()), error.status)


class EnvironmentApp:
    """Reads an environment object's marks once and builds the card, routes and MCP server."""

    def __init__(
        self,
        handler: Any,
        *,
        name: str | None = None,
        max_request_bytes: int | None = None,
        card: EnvironmentCard | None = None,
    ) -> None:
        self.handler = handler
        config = dict(getattr(type(handler), CARD_ATTR, None) or {})
        if card is not None:  # a card given by the caller (the composition style) wins
            config = card.model_dump(exclude_none=True)
        card_name = (
            os.environ.get("ENVIRONMENT_NAME")
            or name
            or config.get("name")
            or type(handler).__name__
        )
        handler_limit: Any = getattr(handler, "max_request_bytes", DEFAULT_MAX_REQUEST_BYTES)
        self.max_request_bytes = int(
            max_request_bytes or os.environ.get("AGENTENV_MAX_REQUEST_BYTES") or handler_limit
        )
        self.surface = read_surface(handler, name=card_name, config=config)

    @property
    def card(self) -> EnvironmentCard:
        return self.surface.card

    @property
    def tools(self) -> dict[str, ServedTool]:
        return self.surface.tools

    @property
    def rpc_handlers(self) -> dict[str, Callable]:
        return self.surface.operations

    # --- MCP -------------------------------------------------------------------------------
    async def list_tools(self, ctx: Any, params: Any) -> mt.ListToolsResult:
        caller = _caller(ctx)
        return _wire(mt.ListToolsResult, {"tools": self.surface.listed_tools(caller.role)})

    async def call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        arguments = params.arguments or {}
        context = new_context(_caller(ctx), params.name, arguments, "mcp", mcp=ctx)
        result = await self.surface.call_tool(params.name, arguments, context)
        return _wire(mt.CallToolResult, result)

    # --- HTTP routes -----------------------------------------------------------------------
    async def card_route(self, request: Request) -> Response:
        return json_response(self.card.model_dump())

    async def ready_route(self, request: Request) -> Response:
        return json_response({"status": "ready", "name": self.card.name, "tools": len(self.tools)})

    async def rpc_route(self, request: Request) -> Response:
        try:
            body = await read_body(request, self.max_request_bytes)
        except BodyTooLarge as e:
            return json_response(rpc_error(None, E.INVALID_REQUEST, f"invalid request: {e}"), 413)
        return json_response(await dispatch(body, self.rpc_handlers))

    def _ext_route(self, ext: ServedExtension) -> Callable:
        fn, verb, sig, uri = ext.fn, ext.verb, ext.sig, ext.uri

        async def route(request: Request) -> Response:
            try:
                if verb == "GET":
                    params: Any = dict(request.query_params)
                else:
                    raw = await read_body(request, self.max_request_bytes)
                    params = loads(raw) if raw else {}
                    if not isinstance(params, dict):
                        raise ValueError("the request body must be a JSON object")
                kwargs = sig.bind(params, allow_unknown=False)
            except BodyTooLarge as e:
                return _ext_error(AgentEnvError("too_large", str(e), status=413))
            except ValueError as e:
                return _ext_error(AgentEnvError("invalid_params", str(e)))
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
                    return _ext_error(e)
                except Exception as e:
                    log.exception("extension %s failed", uri)
                    message = str(e) or type(e).__name__
                    return _ext_error(
                        AgentEnvError("extension_failed", message, applied="unknown", status=500)
                    )
            return json_response(value if value is not None else {})

        return route

    def routes(self) -> list[Route]:
        routes = [
            Route(WELL_KNOWN_PATH, self.card_route, methods=["GET"]),
            Route(READY_PATH, self.ready_route, methods=["GET"]),
            Route(RPC_PATH, self.rpc_route, methods=["POST"]),
        ]
        for ext in self.surface.extensions:
            routes.append(Route(ext.path, self._ext_route(ext), methods=[ext.verb]))
        return routes

    def asgi(self) -> Any:
        """The env's ASGI app; started with an env secret (`AGENTENV_ENV_SECRET`, set by the
        deploy step) it answers only requests carrying it, i.e. the run's gateway
        (`agentenv_protocol.gateway_only`). See `EnvironmentASGI` for what else it answers."""
        from agentenv_protocol.gateway_only import guard

        app = mcp_app(
            self.card.name,
            list_tools=self.list_tools,
            call_tool=self.call_tool,
            routes=self.routes(),
            max_request_bytes=self.max_request_bytes,
        )
        return EnvironmentASGI(guard(app), app)


class AgentEnvEnvironment(EnvironmentHooks):
    """Base class of an environment: decorate it with `@environment_card(...)`, mark methods with
    `@tool` / `@reset_data` / `@add_data` / `@get_data` / `@extension`, then call `serve()`;
    override the `EnvironmentHooks` to choose what is served."""

    _agentenv_app: EnvironmentApp | None = None
    #: A FastMCP app the env built itself; `serve()` runs it (mounting first) as it is.
    mcp: Any = None
    _mounted: bool = False
    _app_built: bool = False

    def mount(self, app: Any) -> Any:
        """Serve this env on a FastMCP app of the author's own (see `agentenv_protocol.mounting`)."""
        from agentenv_protocol.mounting import mount

        if self._mounted:
            raise RuntimeError(f"{type(self).__name__} is already mounted")
        mount(self.environment_app(), app)
        self.mcp, self._mounted = app, True
        return app

    def mounted_card(self) -> EnvironmentCard:
        """The card the server sends: what the `served_*` hooks kept, as `update_tool` left it."""
        return self._served_app().card

    async def update_tool(self, name: str, *, description: str) -> None:
        """Change a served tool's description, on the card and in `tools/list` alike (on the
        FastMCP app it is mounted on too)."""
        self._served_app().surface.update_tool(name, description=description)
        if self._mounted:
            from agentenv_protocol.mounting import relist_tool

            await relist_tool(self.mcp, name, description=description)

    def _served_app(self) -> EnvironmentApp:
        if self._agentenv_app is None or not (self._mounted or self._app_built):
            raise RuntimeError(
                f"{type(self).__name__} is not mounted: call create_app(), mount(app) or serve() "
                "first"
            )
        return self._agentenv_app

    def environment_app(self) -> EnvironmentApp:
        if self._agentenv_app is None:
            self._agentenv_app = EnvironmentApp(self)
        return self._agentenv_app

    @property
    def card(self) -> EnvironmentCard:
        return self.environment_app().card

    def create_app(self) -> Any:
        """The ASGI app (card, data plane, extensions, `/mcp`, `/healthz`)."""
        app = self.environment_app().asgi()
        self._app_built = True
        return app

    def serve(
        self,
        transport: str = "streamable-http",
        *,
        host: str | None = None,
        port: int | None = None,
    ) -> None:
        """Serve on `MCP_HOST`:`MCP_PORT` (default 0.0.0.0:18765) until interrupted; an env that
        set `self.mcp` to its own FastMCP app has that app run, with its own settings."""
        if self.mcp is not None:
            if not self._mounted:
                self.mount(self.mcp)
            self.mcp.run(transport=transport)
            return
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
