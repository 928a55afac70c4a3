"""What an environment object serves, read once from its marks and hooks: its tools (with their
listing options and output), its REST extensions (one method each, or several sharing a URI with
`op`), its data-plane handlers and its card. The server turns this into routes and MCP handlers.

The env's `served_tools` / `served_extensions` / `served_operations` hooks choose what is
served, `extension_params` / `declared_extensions` add to the card, `tool_access = True` turns on
per-role tool rules in the env itself.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from typing import Any

import anyio
import attrs

from agentenv_protocol.authoring import EXT_ATTR, OP_ATTR, OP_GET, TOOL_ATTR
from agentenv_protocol.context import ToolContext, bound
from agentenv_protocol.data_objects import data_objects_extension, takes_write_namespace
from agentenv_protocol.dataplane import OP_METHODS
from agentenv_protocol.errors import FAULT_META_KEY, AgentEnvError
from agentenv_protocol.output import OutputError, OutputSpec, output_spec, tool_result
from agentenv_protocol.schema import Signature, did_you_mean
from agentenv_protocol.tool_access import PATHS as TOOL_ACCESS_PATHS
from agentenv_protocol.tool_access import ToolAccess
from agentenv_protocol.tool_access import extensions as tool_access_extensions
from agentenv_protocol.types import (
    HIDDEN_BY_DEFAULT_META_KEY,
    MCP_PATH,
    MCP_TRANSPORT,
    EnvironmentCapabilities,
    EnvironmentCard,
    EnvironmentExtension,
    EnvironmentInterface,
    EnvironmentTool,
)

log = logging.getLogger(__name__)

ENV_NAME_TOKEN = "{environment_name}"
DEFAULT_TOOL_THREADS = 16


@attrs.define
class ServedTool:
    """One `@tool` method as served: its card descriptor, validator, output and listing options."""

    descriptor: EnvironmentTool
    fn: Callable
    sig: Signature
    output: OutputSpec
    hidden: bool = False
    annotations: dict | None = None
    meta: dict | None = None

    def listed(self) -> dict:
        """The tool as `tools/list` shows it (a wire dict)."""
        entry: dict = {
            "name": self.descriptor.name,
            "description": self.descriptor.description or "",
            "inputSchema": self.sig.model_schema(),
        }
        if self.output.schema is not None:
            entry["outputSchema"] = self.output.schema
        if self.annotations is not None:
            entry["annotations"] = self.annotations
        meta = {**(self.meta or {}), **({HIDDEN_BY_DEFAULT_META_KEY: True} if self.hidden else {})}
        if meta:
            entry["_meta"] = meta
        return entry


@attrs.define
class ServedExtension:
    """One REST route of an extension (one method of it when it was declared with `op`)."""

    uri: str
    op: str | None
    fn: Callable
    path: str
    verb: str
    sig: Signature


def _members(handler: Any, attr: str):
    for name in dir(type(handler)):
        if name.startswith("__"):
            continue
        marker = getattr(getattr(type(handler), name, None), attr, None)
        if marker is not None:
            yield getattr(handler, name), marker


def _hook(handler: Any, name: str) -> Callable | None:
    hook = getattr(handler, name, None)
    return hook if callable(hook) else None


def _tools(handler: Any, card_name: str) -> dict[str, ServedTool]:
    tools: dict[str, ServedTool] = {}
    for fn, marker in _members(handler, TOOL_ATTR):
        name = marker["name"].replace(ENV_NAME_TOKEN, card_name)
        if "{" in name or "}" in name:
            raise ValueError(
                f"@tool name {marker['name']!r}: the only placeholder is {ENV_NAME_TOKEN!r}"
            )
        if name in tools:
            raise ValueError(f"two methods are registered as tool {name!r}")
        label = f"tool {name!r}"
        sig = Signature(fn, label=label)
        tools[name] = ServedTool(
            descriptor=EnvironmentTool(
                name=name, description=marker["description"], inputSchema=sig.schema
            ),
            fn=fn,
            sig=sig,
            output=output_spec(fn, marker.get("structured_output"), label=label),
            hidden=marker.get("hidden_by_default", False),
            annotations=marker.get("annotations"),
            meta=marker.get("meta"),
        )
    hook = _hook(handler, "served_tools")
    if hook is None:
        return tools
    chosen = list(hook([t.descriptor for t in tools.values()]))
    names = [getattr(d, "name", None) for d in chosen]
    unknown = [n for n in names if n not in tools]
    if unknown:
        raise ValueError(
            f"served_tools returned tools with no @tool method: {unknown}"
            f"{did_you_mean(str(unknown[0]), tools)}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"served_tools returned a tool twice: {names}")
    return {d.name: attrs.evolve(tools[d.name], descriptor=d) for d in chosen}


def _operations(handler: Any) -> dict[str, Callable]:
    found: dict[str, Callable] = {}
    for fn, op in _members(handler, OP_ATTR):
        method = OP_METHODS[op]
        if method in found:
            raise ValueError(f"two methods are marked @{op}")
        found[method] = fn
    ordered = {m: found[m] for m in OP_METHODS.values() if m in found}
    hook = _hook(handler, "served_operations")
    if hook is None:
        return ordered
    chosen = list(hook(list(ordered)))
    unknown = [m for m in chosen if m not in ordered]
    if unknown:
        raise ValueError(f"served_operations returned operations with no handler: {unknown}")
    return {m: fn for m, fn in ordered.items() if m in chosen}


def _one_value(uri: str, field: str, values: list) -> Any:
    given = {v for v in values if v is not None}
    if len(given) > 1:
        raise ValueError(f"the methods of extension {uri} declare different {field}: {given}")
    return given.pop() if given else None


def _extensions(handler: Any) -> tuple[list[EnvironmentExtension], list[ServedExtension]]:
    routes: list[ServedExtension] = []
    markers: dict[str, list[dict]] = {}
    seen: set = set()
    for fn, marker in _members(handler, EXT_ATTR):
        uri, op = marker["uri"], marker.get("op")
        ops = [m.get("op") for m in markers.get(uri, [])]
        if ops and (op is None or None in ops):
            raise ValueError(
                f"two handlers serve extension {uri}; give each an op= to serve several methods"
            )
        if op in ops:
            raise ValueError(f"two handlers serve method {op!r} of extension {uri}")
        if (marker["path"], marker["method"]) in seen:
            raise ValueError(f"two extensions serve {marker['method']} {marker['path']}")
        seen.add((marker["path"], marker["method"]))
        markers.setdefault(uri, []).append({**marker, "fn": fn})
        label = f"extension {fn.__name__!r}"
        routes.append(
            ServedExtension(
                uri, op, fn, marker["path"], marker["method"], Signature(fn, label=label)
            )
        )
    sigs = {id(r.fn): r.sig for r in routes}
    params_hook = _hook(handler, "extension_params")
    offered: list[EnvironmentExtension] = []
    for uri, entries in markers.items():
        if entries[0].get("op") is None:
            m = entries[0]
            params = m["params"]
            if params is None:
                request = sigs[id(m["fn"])].schema
                methods = {m["fn"].__name__: {"method": m["method"], "request": request}}
                params = {"endpoint": m["path"], "methods": methods}
        else:
            methods = {
                m["op"]: {
                    "method": m["method"],
                    "endpoint": m["path"],
                    "request": sigs[id(m["fn"])].schema,
                }
                for m in entries
            }
            params = {**(params_hook(uri) if params_hook else {}), "methods": methods}
        offered.append(
            EnvironmentExtension(
                uri=uri,
                description=_one_value(uri, "descriptions", [m["description"] for m in entries]),
                params=params,
                required=_one_value(uri, "required values", [m["required"] for m in entries]),
            )
        )
    hook = _hook(handler, "served_extensions")
    if hook is not None:
        chosen = {e.uri: e for e in hook(list(offered))}
        unknown = sorted(set(chosen) - set(markers))
        if unknown:
            raise ValueError(
                f"served_extensions returned extensions with no @extension handler: {unknown}"
            )
        kept = []
        for r in routes:
            served = chosen.get(r.uri)
            methods = (served.params or {}).get("methods") or {} if served else {}
            if served is not None and (r.op is None or r.op in methods):
                kept.append(r)
        for uri, served in chosen.items():
            handled = {m.get("op") for m in markers[uri]}
            extra = set((served.params or {}).get("methods") or {}) - handled
            if None not in handled and extra:
                raise ValueError(
                    f"served_extensions lists methods of {uri} with no @extension handler: "
                    f"{sorted(extra)}"
                )
        routes, offered = kept, list(chosen.values())
    declared_hook = _hook(handler, "declared_extensions")
    declared = list(declared_hook()) if declared_hook else []
    clash = sorted(d.uri for d in declared if d.uri in markers)
    if clash:
        raise ValueError(f"extensions both declared and served by a handler: {clash}")
    return offered + declared, routes


@attrs.define
class Surface:
    """Everything an environment serves; `card` is what `GET /.well-known/agent-env.json` sends."""

    handler: Any
    tools: dict[str, ServedTool]
    operations: dict[str, Callable]
    extensions: list[ServedExtension]
    card: EnvironmentCard
    access: ToolAccess | None = None
    on_tool_call: Callable | None = None
    _limiter: Any = attrs.field(default=None, init=False, repr=False)

    # --- MCP -------------------------------------------------------------------------------
    def listed_tools(self, role: str | None) -> list[dict]:
        """`tools/list` for a caller with `role` (the env's own tool rules apply when it has them)."""
        return [
            t.listed()
            for n, t in self.tools.items()
            if self.access is None or not self.access.is_disabled(role, n)
        ]

    async def call_tool(self, name: str, arguments: Any, context: ToolContext) -> dict:
        """The wire `CallToolResult` of one `tools/call`, run under `context`."""
        entry = self.tools.get(name)
        if entry is None:
            return error_result(f"unknown tool {name!r}{did_you_mean(name, self.tools)}")
        try:
            kwargs = entry.sig.bind(arguments or {})
        except ValueError as e:
            return error_result(str(e))
        if entry.sig.context_param:
            kwargs[entry.sig.context_param] = context
        if entry.sig.fastmcp_context_param:  # FastMCP's own Context when one runs the tool
            fastmcp = context.mcp if type(context.mcp).__name__ == "Context" else None
            kwargs[entry.sig.fastmcp_context_param] = fastmcp
        with bound(context):
            try:
                if self.access is not None:
                    self.access.check_call(context)
                hook = self.on_tool_call
                answer = await _maybe_await(hook(context)) if hook else None
                if answer is not None:
                    return _hook_answer(answer)
                value = await _maybe_await(await self._run(entry.fn, kwargs))
            except AgentEnvError as e:
                return agentenv_error_result(e)
            except Exception as e:
                log.exception("tool %r failed", name)
                return env_fault(error_result(f"tool {name!r} failed: {type(e).__name__}: {e}"))
            except (
                BaseException
            ) as e:  # SystemExit, KeyboardInterrupt: the call fails, not the server
                if isinstance(e, anyio.get_cancelled_exc_class()):
                    raise
                log.error("tool %r raised %s; the call failed, the server goes on", name, e)
                return env_fault(error_result(f"tool {name!r} failed: {type(e).__name__}: {e}"))
        try:
            return tool_result(value, entry.output)
        except (OutputError, TypeError, ValueError) as e:
            return env_fault(error_result(f"tool {name!r} returned a value that does not fit: {e}"))

    async def _run(self, fn: Callable, kwargs: dict) -> Any:
        """Call a tool: a coroutine function on the event loop, a plain function in a worker
        thread of a bounded pool (so a blocking tool never stalls `/healthz` or other calls)."""
        if self._limiter is None:
            threads = tool_threads()
            self._limiter = anyio.CapacityLimiter(threads) if threads else False
        if not self._limiter or _is_async(fn):
            return fn(**kwargs)
        return await anyio.to_thread.run_sync(
            functools.partial(fn, **kwargs), limiter=self._limiter
        )

    def update_tool(self, name: str, *, description: str) -> None:
        """Change a served tool's description, on the card and in `tools/list` alike."""
        if name not in self.tools:
            raise ValueError(f"no served tool is named {name!r}{did_you_mean(name, self.tools)}")
        entry = self.tools[name]
        entry.descriptor = entry.descriptor.model_copy(update={"description": description})
        caps = self.card.capabilities
        tools = [
            t.model_copy(update={"description": description}) if t.name == name else t
            for t in caps.tools or []
        ]
        self.card = self.card.model_copy(
            update={"capabilities": caps.model_copy(update={"tools": tools})}
        )


def tool_threads() -> int:
    """The size of each env server's pool for sync tools (`AGENTENV_TOOL_THREADS`, default 16;
    0 runs them on the event loop, for envs whose objects must stay on one thread)."""
    raw = os.environ.get("AGENTENV_TOOL_THREADS", "").strip()
    return int(raw) if raw.isdigit() else DEFAULT_TOOL_THREADS


def _is_async(fn: Callable) -> bool:
    target = getattr(fn, "__func__", fn)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(target)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _hook_answer(answer: Any) -> dict:
    if type(answer).__name__ != "CallToolResult" or not hasattr(answer, "model_dump"):
        raise TypeError(
            f"on_tool_call must return None or mcp.types.CallToolResult, got {type(answer).__name__}"
        )
    return answer.model_dump(mode="json", by_alias=True, exclude_none=True)


def error_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def env_fault(result: dict) -> dict:
    """`result` marked as the env's own failure (a tool that raised or returned what does not
    fit), so the gateway's call log and the trial's failure class blame the env, not the
    agent that made the call (`agentenv_protocol.gateway.errors.FAULT_META_KEY`)."""
    return {**result, "_meta": {FAULT_META_KEY: "env"}}


def agentenv_error_result(error: AgentEnvError) -> dict:
    """An `AgentEnvError` as a tool answer: `"<code>: <message>"` plus its fields, structured."""
    return {**error_result(f"{error.code}: {error.message}"), "structuredContent": error.fields()}


def _merged_card(config: dict, name: str, tools, exts, operations) -> EnvironmentCard:
    card = EnvironmentCard(**{**config, "name": name})
    caps = card.capabilities or EnvironmentCapabilities()
    declared_tools = list(caps.tools or [])
    names = {t.name for t in declared_tools}
    declared_tools += [t.descriptor for n, t in tools.items() if n not in names]
    declared_exts = list(caps.extensions or [])
    uris = {e.uri for e in declared_exts}
    declared_exts += [e for e in exts if e.uri not in uris]
    caps = caps.model_copy(
        update={
            "tools": declared_tools or None,
            "extensions": declared_exts or None,
            "operations": list(operations),
        }
    )
    interfaces = list(card.additionalInterfaces)
    if not any(i.transport == MCP_TRANSPORT for i in interfaces):
        interfaces.append(EnvironmentInterface(url=MCP_PATH, transport=MCP_TRANSPORT))
    return card.model_copy(update={"capabilities": caps, "additionalInterfaces": interfaces})


def read_surface(handler: Any, *, name: str, config: dict) -> Surface:
    """Read `handler`'s marks and hooks; errors name the method or hook at fault."""
    tools = _tools(handler, name)
    operations = _operations(handler)
    exts, routes = _extensions(handler)
    get_handler = operations.get(OP_METHODS[OP_GET])
    if get_handler is not None and takes_write_namespace(get_handler):
        exts.append(data_objects_extension())
    access = None
    if getattr(handler, "tool_access", False) is True:
        access = ToolAccess(n for n, t in tools.items() if t.hidden)
        exts += tool_access_extensions()
        for action, path in TOOL_ACCESS_PATHS.items():
            routes.append(_access_route(access, action, path))
    card = _merged_card(config, name, tools, exts, operations)
    hook = _hook(handler, "on_tool_call")
    if getattr(type(handler), "on_tool_call", None) is EnvironmentHooks.on_tool_call:
        hook = None  # the default lets every call proceed: skip it
    return Surface(handler, tools, operations, routes, card, access, hook)


def _access_route(access: ToolAccess, action: str, path: str) -> ServedExtension:
    def change(**body: Any) -> dict:
        return access.change(action, body)

    change.__name__ = f"{action}_tools"
    uri = next(e.uri for e in tool_access_extensions() if action in (e.params or {})["methods"])
    return ServedExtension(uri, action, change, path, "POST", Signature(change, label=uri))


class EnvironmentHooks:
    """The hooks an environment overrides to choose, at mount, what it serves (the defaults serve
    everything it marks), and the tool-call hook."""

    #: Filter `tools/list` and refuse `tools/call` per caller role, and serve the tool-access
    #: extensions, for an env agents reach with no gateway in front.
    tool_access: bool = False

    def served_tools(self, tools: list[EnvironmentTool]) -> list[EnvironmentTool]:
        """The `@tool` methods to serve; a returned descriptor's description replaces the marked one."""
        return tools

    def served_extensions(
        self, extensions: list[EnvironmentExtension]
    ) -> list[EnvironmentExtension]:
        """The extensions to serve; of one with `op` methods, the methods its descriptor still lists."""
        return extensions

    def served_operations(self, operations: list[str]) -> list[str]:
        """The data-plane methods (`data/add`, ...) to serve."""
        return operations

    def extension_params(self, uri: str) -> dict:
        """Extension-level params (features, limits) advertised beside an `op` extension's methods."""
        return {}

    def declared_extensions(self) -> list[EnvironmentExtension]:
        """Declaration-only extensions for the card: params and no handler."""
        return []

    def on_tool_call(self, context: ToolContext) -> Any:
        """Runs before every `tools/call`, under the bound `context`: None lets the call proceed,
        an `mcp.types.CallToolResult` (`isError=True` for a refusal) is sent instead. May be async."""
        return None
