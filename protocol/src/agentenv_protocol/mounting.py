"""`AgentEnvEnvironment.mount(app)`: serve an environment on a FastMCP app its author built, as
envs written for the existing SDK do: mcp 1.x's `mcp.server.fastmcp.FastMCP`, the standalone
`fastmcp` package (2.x/3.x, anything with its public `middleware` list), or anything with
FastMCP's public `custom_route` and `tool()`. The card, data plane and extension routes become
custom routes; each `@tool` becomes a FastMCP tool whose call runs through this SDK's tool call
(context binding, `on_tool_call`, tool rules, AgentEnvError results), so a mounted env answers
as a served one, `tool_access = True` included (tools/list filtered by the caller's role). What
FastMCP itself lists: the tool's input schema, annotations and `_meta`, and the output schema
(on mcp's FastMCP the tool dispatch is wrapped so an error result of such a tool is sent as is
rather than checked against the schema; on fastmcp a middleware answers the call).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from agentenv_protocol.context import ToolContext, caller_from_request, new_context
from agentenv_protocol.surface import ServedTool
from agentenv_protocol.types import (
    MCP_PATH,
    MCP_TRANSPORT,
    EnvironmentInterface,
)

if TYPE_CHECKING:
    from pydantic import BaseModel


class _Answer(Exception):
    """Carries a finished error result past FastMCP's output validation (see `_catch_answers`)."""

    def __init__(self, result: dict) -> None:
        super().__init__(result.get("content"))
        self.result = result


def _catch_answers(app: Any, result_type: type[BaseModel]) -> bool:
    """Wrap FastMCP's tool dispatch (its tool manager, the one seam mcp 1.x has) so an error
    result of a tool that lists an output schema reaches the wire as is; False without one."""
    manager = getattr(app, "_tool_manager", None)
    inner = getattr(manager, "call_tool", None)
    if manager is None or not callable(inner):
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


def _adapter(
    app: Any, surface: Any, tool: ServedTool, result_type: type[BaseModel], typed: bool
) -> Any:
    name = tool.descriptor.name
    sig = inspect.signature(tool.fn)
    injected = (tool.sig.context_param, tool.sig.fastmcp_context_param)
    params = [p for p in sig.parameters.values() if p.name not in injected]

    async def call(**arguments: Any) -> Any:
        get_context = getattr(app, "get_context", None)
        fastmcp_context = get_context() if callable(get_context) else None
        caller = _caller_of(getattr(fastmcp_context, "request_context", None))
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


def _caller_of(request_context: Any) -> Any:
    """The caller of the MCP request FastMCP is handling (an empty one outside a request)."""
    request = getattr(request_context, "request", None)
    return caller_from_request(
        getattr(request_context, "meta", None), getattr(request, "headers", None)
    )


def _request_context(app: Any) -> Any:
    get_context = getattr(app, "get_context", None)
    if not callable(get_context):
        return None
    try:
        return getattr(get_context(), "request_context", None)
    except (LookupError, ValueError, RuntimeError):  # outside a request
        return None


def _kind(app: Any) -> str:
    """How tools reach `app`: fastmcp 2.x/3.x's public middleware chain, mcp 1.x FastMCP's
    `add_tool`, or a bare `tool()` decorator."""
    if not callable(getattr(app, "custom_route", None)):
        raise TypeError(
            "mount() needs a FastMCP app (mcp's or fastmcp's, with custom_route and tool), "
            f"got {type(app).__name__}"
        )
    if isinstance(getattr(app, "middleware", None), list) and callable(
        getattr(app, "add_middleware", None)
    ):
        return "middleware"
    if callable(getattr(app, "add_tool", None)) and callable(getattr(app, "get_context", None)):
        return "add_tool"
    if callable(getattr(app, "tool", None)):
        return "decorator"
    raise TypeError(
        f"mount() needs a FastMCP app (with custom_route and tool), got {type(app).__name__}"
    )


def mount(served: Any, app: Any) -> Any:
    """Add the routes and tools of `served` (an `EnvironmentApp`) to `app`; the card declares
    the app's MCP path. Nothing is added when the app cannot honour the env."""
    kind = _kind(app)
    surface = served.surface
    if surface.access is not None:
        _check_tool_access(app, kind)
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
    if kind == "middleware":
        _mount_on_fastmcp(app, surface)
    else:
        _mount_on_mcp(app, surface, kind)
    _guard_apps(app)
    return app


def _mount_on_mcp(app: Any, surface: Any, kind: str) -> None:
    import mcp.types as mt

    answers = _catch_answers(app, mt.CallToolResult)
    if surface.access is not None:
        _filter_listing(app, surface)
    for tool in surface.tools.values():
        typed = answers and tool.output.model is not None
        extra: dict = {}
        listed = tool.listed()
        if "annotations" in listed:
            extra["annotations"] = mt.ToolAnnotations.model_validate(listed["annotations"])
        if "_meta" in listed:
            extra["meta"] = listed["_meta"]
        adapter = _adapter(app, surface, tool, mt.CallToolResult, typed)
        if kind == "add_tool":
            app.add_tool(
                adapter, name=tool.descriptor.name, description=tool.descriptor.description, **extra
            )
        else:
            app.tool(name=tool.descriptor.name, description=tool.descriptor.description)(adapter)


def _check_tool_access(app: Any, kind: str) -> None:
    """Refuse, before anything is added, an app on which `tool_access = True` cannot hold: one
    whose tools cannot read their caller, or whose tools/list cannot be filtered by role."""
    if kind == "middleware":
        return
    if not callable(getattr(app, "get_context", None)):
        raise RuntimeError(
            f"{type(app).__name__} gives its tools no request to read the caller from, so "
            "tool_access would read an empty caller; mount on mcp's FastMCP (or "
            "create_fastmcp_app) or on fastmcp's"
        )
    if not callable(getattr(getattr(app, "_tool_manager", None), "list_tools", None)):
        raise RuntimeError(
            f"{type(app).__name__} has no tool manager to filter tools/list by, so tool_access "
            "cannot be honoured; mount on mcp's FastMCP or on fastmcp's"
        )


def _filter_listing(app: Any, surface: Any) -> None:
    """mcp's FastMCP lists what its tool manager holds: list, per caller role, what the env's
    tool rules let that role see."""
    manager = app._tool_manager
    inner = manager.list_tools

    def list_tools(*args: Any, **kwargs: Any) -> Any:
        role = _caller_of(_request_context(app)).role
        return [
            t
            for t in inner(*args, **kwargs)
            if t.name not in surface.tools or not surface.access.is_disabled(role, t.name)
        ]

    functools.update_wrapper(list_tools, inner)
    manager.list_tools = list_tools


def _mount_on_fastmcp(app: Any, surface: Any) -> None:
    """The standalone `fastmcp` package: each tool is listed as registered here, and a
    middleware (joined at the end of the app's chain, so the author's own wrap it) runs the
    env's tool call for it and filters tools/list by the caller's role."""
    import mcp.types as mt
    from fastmcp.server.middleware import Middleware
    from fastmcp.tools.tool import ToolResult as FastToolResult

    if any(getattr(m, "__agentenv_surface__", None) is not None for m in app.middleware):
        raise RuntimeError(
            f"{type(app).__name__} already serves an AgentEnv env; mount one per app"
        )

    class AgentEnvTools(Middleware):
        async def on_list_tools(self, context: Any, call_next: Any) -> Any:
            tools = await call_next(context)
            if surface.access is None:
                return tools
            role = _caller_of(_fastmcp_request(context)).role
            return [
                t
                for t in tools
                if t.name not in surface.tools or not surface.access.is_disabled(role, t.name)
            ]

        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            message = context.message
            if message.name not in surface.tools:
                return await call_next(context)
            request_context = _fastmcp_request(context)
            arguments = dict(message.arguments or {})
            tool_context = new_context(
                caller_from_request(
                    getattr(message, "meta", None),
                    getattr(getattr(request_context, "request", None), "headers", None),
                ),
                message.name,
                arguments,
                "mcp",
                mcp=context.fastmcp_context,
            )
            result = mt.CallToolResult.model_validate(
                await surface.call_tool(message.name, arguments, tool_context)
            )
            return FastToolResult(
                content=result.content,
                structured_content=result.structuredContent,
                meta=result.meta,
                is_error=result.isError,
            )

    middleware = AgentEnvTools()
    # a marker attribute on fastmcp's middleware object, read back to find our surface
    middleware.__agentenv_surface__ = surface  # type: ignore[attr-defined]
    for tool in surface.tools.values():
        listed = tool.listed()
        app.tool(
            _listed_only(tool),
            name=tool.descriptor.name,
            description=tool.descriptor.description,
            annotations=listed.get("annotations"),
            meta=listed.get("_meta"),
            output_schema=listed.get("outputSchema"),
        )
    app.add_middleware(middleware)


def _fastmcp_request(context: Any) -> Any:
    fastmcp_context = getattr(context, "fastmcp_context", None)
    try:
        return getattr(fastmcp_context, "request_context", None)
    except (LookupError, ValueError, RuntimeError):
        return None


def _listed_only(tool: ServedTool) -> Any:
    """What fastmcp registers for `tool`: its signature (for the input schema) on a function
    that only the env's middleware answers for."""
    sig = inspect.signature(tool.fn)
    injected = (tool.sig.context_param, tool.sig.fastmcp_context_param)
    params = [p for p in sig.parameters.values() if p.name not in injected]

    async def listed(**arguments: Any) -> Any:
        raise RuntimeError(f"tool {tool.descriptor.name!r} is answered by the AgentEnv middleware")

    listed.__name__ = tool.fn.__name__
    listed.__doc__ = tool.descriptor.description
    # functions take a __signature__ (inspect reads it); typeshed does not declare it
    listed.__signature__ = sig.replace(parameters=params, return_annotation=inspect.Signature.empty)  # type: ignore[attr-defined]
    listed.__annotations__ = {
        p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty
    }
    return listed


async def relist_tool(app: Any, name: str, *, description: str) -> None:
    """Have `app` list the mounted tool `name` with its new description."""
    manager = getattr(app, "_tool_manager", None)
    if manager is not None and callable(getattr(manager, "get_tool", None)):
        listed = manager.get_tool(name)  # mcp's FastMCP lists the Tool its manager holds
    else:
        get_tool = getattr(app, "get_tool", None)
        listed = await get_tool(name) if callable(get_tool) else None
    if listed is not None:
        listed.description = description


def _guard_apps(app: Any) -> None:
    """Make the ASGI apps FastMCP builds to serve answer only the gateway (with an env secret)."""
    from agentenv_protocol.gateway_only import GatewayOnly, env_secret

    secret = env_secret()
    if not secret:
        return
    for attr in ("streamable_http_app", "sse_app", "http_app"):
        build = getattr(app, attr, None)
        if callable(build) and not getattr(build, "__agentenv_guarded__", False):

            def guarded(*args: Any, __build: Any = build, **kwargs: Any) -> Any:
                return GatewayOnly(__build(*args, **kwargs), secret)

            guarded.__agentenv_guarded__ = True  # type: ignore[attr-defined]
            setattr(app, attr, guarded)


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

    wrapper: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):

        async def awaiting(*args: Any, **kwargs: Any) -> Any:
            return await fn(**fill(args, kwargs))

        wrapper = awaiting
    else:

        def calling(*args: Any, **kwargs: Any) -> Any:
            return fn(**fill(args, kwargs))

        wrapper = calling

    functools.update_wrapper(wrapper, fn)
    wrapper.__signature__ = reduced  # type: ignore[union-attr]  # inspect.signature reads it
    wrapper.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != slot}
    return wrapper
