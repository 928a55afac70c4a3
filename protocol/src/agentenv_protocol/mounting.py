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
    _guard_apps(app)
    return app


def _guard_apps(app: Any) -> None:
    """Make the ASGI apps FastMCP builds to serve answer only the gateway (with an env secret)."""
    from agentenv_protocol.gateway_only import GatewayOnly, env_secret

    secret = env_secret()
    if not secret:
        return
    for attr in ("streamable_http_app", "sse_app"):
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
