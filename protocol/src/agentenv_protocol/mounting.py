"""`AgentEnvEnvironment.mount(app)`: serve an environment on a FastMCP app its author built
(mcp 1.x's `mcp.server.fastmcp.FastMCP`, or anything with FastMCP's public `custom_route` and
`add_tool`), as envs written for the existing SDK do. The card, data plane and extension routes
become custom routes; each `@tool` becomes a FastMCP tool whose call runs through this SDK's
tool call (context binding, `on_tool_call`, tool rules, AgentEnvError results), so a mounted env
answers as a served one. What FastMCP itself lists: the tool's input schema, annotations and
`_meta`; an output schema is not listed there (FastMCP would validate error results against it).
"""

from __future__ import annotations

import inspect
from typing import Any

from agentenv_protocol.context import caller_from_request, new_context
from agentenv_protocol.surface import ServedTool
from agentenv_protocol.types import MCP_PATH, MCP_TRANSPORT, EnvironmentInterface


def _meta_dict(meta: Any) -> dict:
    if meta is None:
        return {}
    if isinstance(meta, dict):
        return meta
    dump = getattr(meta, "model_dump", None)
    return dump(by_alias=True, exclude_none=True) if dump else {}


def _adapter(app: Any, surface: Any, tool: ServedTool, result_type: type) -> Any:
    name = tool.descriptor.name
    sig = inspect.signature(tool.fn)
    params = [p for p in sig.parameters.values() if p.name != tool.sig.context_param]

    async def call(**arguments: Any) -> Any:
        request_context = getattr(app.get_context(), "request_context", None)
        request = getattr(request_context, "request", None)
        caller = caller_from_request(
            _meta_dict(getattr(request_context, "meta", None)), getattr(request, "headers", None)
        )
        context = new_context(caller, name, arguments, "mcp", mcp=request_context)
        return result_type.model_validate(await surface.call_tool(name, arguments, context))

    call.__name__ = tool.fn.__name__
    call.__doc__ = tool.descriptor.description
    call.__signature__ = sig.replace(parameters=params, return_annotation=result_type)  # type: ignore[attr-defined]
    hints = {p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty}
    call.__annotations__ = {**hints, "return": result_type}
    return call


def mount(env: Any, app: Any) -> Any:
    """Add `env`'s routes and tools to `app`; the card declares the app's MCP path."""
    if not callable(getattr(app, "custom_route", None)) or not callable(
        getattr(app, "add_tool", None)
    ):
        raise TypeError(
            f"mount() needs a FastMCP app (with custom_route and add_tool), got {type(app).__name__}"
        )
    import mcp.types as mt

    served = env.environment_app()
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
    for tool in surface.tools.values():
        extra: dict = {}
        listed = tool.listed()
        if "annotations" in listed:
            extra["annotations"] = mt.ToolAnnotations.model_validate(listed["annotations"])
        if "_meta" in listed:
            extra["meta"] = listed["_meta"]
        app.add_tool(
            _adapter(app, surface, tool, mt.CallToolResult),
            name=tool.descriptor.name,
            description=tool.descriptor.description,
            **extra,
        )
    return app
