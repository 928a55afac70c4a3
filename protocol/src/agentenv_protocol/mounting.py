"""`AgentEnvEnvironment.mount(app)`: serve an environment on a FastMCP app its author built
(mcp 1.x's `mcp.server.fastmcp.FastMCP`, or anything with FastMCP's public `custom_route` and
`add_tool`), as envs written for the existing SDK do. The card, data plane and extension routes
become custom routes; each `@tool` becomes a FastMCP tool whose call runs through this SDK's
tool call (context binding, `on_tool_call`, tool rules, AgentEnvError results), so a mounted env
answers as a served one. What FastMCP itself lists: the tool's input schema, annotations and
`_meta`, and the output schema (FastMCP's tool dispatch is wrapped so an error result of such a
tool is sent as is rather than checked against the schema).
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Annotated, Any

from agentenv_protocol.context import ToolContext, caller_from_request, new_context
from agentenv_protocol.surface import ServedTool
from agentenv_protocol.types import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    MCP_PATH,
    MCP_TRANSPORT,
    RPC_PATH,
    WELL_KNOWN_PATH,
    EnvironmentInterface,
)


class _Answer(Exception):
    """Carries a finished error result past FastMCP's output validation (see `_catch_answers`)."""

    def __init__(self, result: dict) -> None:
        super().__init__(result.get("content"))
        self.result = result


def _catch_answers(app: Any, result_type: type) -> bool:
    """Wrap FastMCP's tool dispatch (its tool manager, the one seam mcp 1.x has) so an error
    result of a tool that lists an output schema reaches the wire as is; False without one."""
    manager = getattr(app, "_tool_manager", None)
    inner = getattr(manager, "call_tool", None)
    if not callable(inner):
        return False
    if getattr(inner, "__agentenv_answers__", False):
        return True

    async def call_tool(name: str, arguments: dict, *args: Any, **kwargs: Any) -> Any:
        try:
            return await inner(name, arguments, *args, **kwargs)
        except Exception as e:
            cause: BaseException | None = e
            while cause is not None and not isinstance(cause, _Answer):
                cause = cause.__cause__ or cause.__context__
            if cause is None:
                raise
            return result_type.model_validate(cause.result)

    functools.update_wrapper(call_tool, inner)
    call_tool.__agentenv_answers__ = True  # type: ignore[attr-defined]
    manager.call_tool = call_tool
    return True


def _adapter(app: Any, surface: Any, tool: ServedTool, result_type: type, typed: bool) -> Any:
    name = tool.descriptor.name
    sig = inspect.signature(tool.fn)
    injected = (tool.sig.context_param, tool.sig.fastmcp_context_param)
    params = [p for p in sig.parameters.values() if p.name not in injected]

    async def call(**arguments: Any) -> Any:
        fastmcp_context = app.get_context()
        request_context = getattr(fastmcp_context, "request_context", None)
        request = getattr(request_context, "request", None)
        caller = caller_from_request(
            getattr(request_context, "meta", None), getattr(request, "headers", None)
        )
        context = new_context(caller, name, arguments, "mcp", mcp=fastmcp_context)
        result = await surface.call_tool(name, arguments, context)
        if typed and result.get("isError"):
            raise _Answer(result)
        return result_type.model_validate(result)

    call.__name__ = tool.fn.__name__
    call.__doc__ = tool.descriptor.description
    # typed: FastMCP lists the output model's schema and sends the result as is
    returns = Annotated[result_type, tool.output.model] if typed else result_type
    call.__signature__ = sig.replace(parameters=params, return_annotation=returns)  # type: ignore[attr-defined]
    hints = {p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty}
    call.__annotations__ = {**hints, "return": returns}
    return call


def mount(served: Any, app: Any) -> Any:
    """Add the routes and tools of `served` (an `EnvironmentApp`) to `app`; the card declares
    the app's MCP path."""
    if not callable(getattr(app, "custom_route", None)) or not callable(
        getattr(app, "add_tool", None)
    ):
        raise TypeError(
            f"mount() needs a FastMCP app (with custom_route and add_tool), got {type(app).__name__}"
        )
    import mcp.types as mt

    surface = served.surface
    path = getattr(getattr(app, "settings", None), "streamable_http_path", None)
    if path:  # the entry this SDK added points at the app's path; a declared one stays
        interfaces = [
            EnvironmentInterface(url=path, transport=MCP_TRANSPORT)
            if i.transport == MCP_TRANSPORT and i.url == MCP_PATH
            else i
            for i in surface.card.additionalInterfaces
        ]
        surface.card = surface.card.model_copy(update={"additionalInterfaces": interfaces})
    for route in served.routes():
        app.custom_route(route.path, methods=sorted(route.methods or ["GET"]))(route.endpoint)
    answers = _catch_answers(app, mt.CallToolResult)
    for tool in surface.tools.values():
        typed = answers and tool.output.model is not None
        extra: dict = {}
        listed = tool.listed()
        if "annotations" in listed:
            extra["annotations"] = mt.ToolAnnotations.model_validate(listed["annotations"])
        if "_meta" in listed:
            extra["meta"] = listed["_meta"]
        app.add_tool(
            _adapter(app, surface, tool, mt.CallToolResult, typed),
            name=tool.descriptor.name,
            description=tool.descriptor.description,
            **extra,
        )
    return app


class AgentEnvApplication:
    """The existing SDK's composition style: `AgentEnvFastMCPApplication(environment_card=card,
    handler=handler).add_routes_to_app(app)` serves any object's marks under `card`, without
    the base class."""

    def __init__(self, environment_card: Any, handler: Any) -> None:
        from agentenv_protocol.server import EnvironmentApp

        self.handler = handler
        self.served = EnvironmentApp(handler, card=environment_card)

    @property
    def environment_card(self) -> Any:
        return self.served.card

    def add_routes_to_app(
        self, app: Any, *, rpc_url: str = RPC_PATH, card_url: str = WELL_KNOWN_PATH
    ) -> None:
        if (rpc_url, card_url) != (RPC_PATH, WELL_KNOWN_PATH):
            raise ValueError(
                f"add_routes_to_app: the data plane is served at {RPC_PATH} and the card at "
                f"{WELL_KNOWN_PATH}; other paths are not supported"
            )
        self._add(app)

    def _add(self, app: Any) -> None:
        raise NotImplementedError


class AgentEnvFastMCPApplication(AgentEnvApplication):
    """Routes and tools onto a FastMCP app (see `mount`)."""

    def _add(self, app: Any) -> None:
        mount(self.served, app)


class AgentEnvStarletteApplication(AgentEnvApplication):
    """Routes onto a Starlette (or FastAPI) app, which has no MCP tools: a handler with `@tool`
    methods is refused."""

    def __init__(self, environment_card: Any, handler: Any) -> None:
        super().__init__(environment_card, handler)
        if self.served.tools:
            raise ValueError(
                f"@tool methods ({', '.join(self.served.tools)}) need a FastMCP app; "
                "use AgentEnvFastMCPApplication"
            )

    def _add(self, app: Any) -> None:
        app.router.routes.extend(self.served.routes())


def create_fastmcp_app(handler: Any, *, card: Any, **fastmcp_kwargs: Any) -> Any:
    """A FastMCP app (mcp 1.x) for the deploy contract (`MCP_HOST`/`MCP_PORT`, DNS-rebinding
    protection off) with `handler` mounted under `card`; returned un-served."""
    try:
        from mcp.server.fastmcp import FastMCP
    except ImportError as e:
        raise ImportError(
            "create_fastmcp_app needs mcp's FastMCP (mcp>=1.25,<2); this SDK's own "
            "AgentEnvEnvironment.serve() needs no FastMCP"
        ) from e
    app = FastMCP(card.name, **fastmcp_kwargs)
    app.settings.host = os.environ.get("MCP_HOST", DEFAULT_HOST)
    app.settings.port = int(os.environ.get("MCP_PORT", DEFAULT_PORT))
    app.settings.transport_security.enable_dns_rebinding_protection = False
    AgentEnvFastMCPApplication(card, handler).add_routes_to_app(app)
    return app


def injecting(fn: Any) -> Any:
    """`fn` without its `ToolContext` parameter, filled from `ToolContext.current()` on each
    call, for registering a context-taking function on another tool registry."""
    from agentenv_protocol.schema import Signature

    slot = Signature(fn, label=getattr(fn, "__name__", "function")).context_param
    if slot is None:
        return fn
    sig = inspect.signature(fn)
    reduced = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != slot])

    def fill(args: tuple, kwargs: dict) -> dict:
        bound_args = reduced.bind(*args, **kwargs)
        return {**bound_args.arguments, slot: ToolContext.current()}

    if inspect.iscoroutinefunction(fn):

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            return await fn(**fill(args, kwargs))
    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(**fill(args, kwargs))

    functools.update_wrapper(wrapper, fn)
    wrapper.__signature__ = reduced  # type: ignore[attr-defined]
    wrapper.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != slot}
    return wrapper
