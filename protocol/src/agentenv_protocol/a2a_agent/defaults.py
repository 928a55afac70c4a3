"""The SDK's default handlers of its own operations (agent-config, mcp-config, trajectory,
triggers), and `DefaultExtensionHandlers`, through which an agent that overrides an operation
can still call the default (`await self.default_handlers.call(AGENT_CONFIG_V1.set, request)`).

A handler takes the request (a pydantic model, a dict, or nothing) and returns the JSON body;
it raises `OperationError(status, message)` to answer with an error status.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from agentenv_protocol.a2a_agent.extensions import OperationReference

if TYPE_CHECKING:
    from agentenv_protocol.a2a_agent.runtime import AgentRuntime

Handler = Callable[..., Awaitable[Any]]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskTrajectoryRequest(_Body):
    """trajectory/v1 `get` of one task."""

    task_id: str


class ContextTrajectoryRequest(_Body):
    """trajectory/v1 `get` of every task of one context."""

    context_id: str


class McpAddRequest(BaseModel):
    """The body of mcp-config/v1 `add`: an MCP server's URL, optional headers and name."""

    model_config = ConfigDict(extra="forbid")
    url: str
    headers: dict[str, str] | None = None
    name: str | None = None


class OperationError(Exception):
    """An extension operation refused its request: answered with `status` and `message`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def as_dict(request: Any) -> dict[str, Any]:
    """A request body as a dict (a pydantic model gives the fields that were sent)."""
    if request is None:
        return {}
    if isinstance(request, BaseModel):
        return request.model_dump(mode="json", exclude_unset=True)
    if isinstance(request, dict):
        return request
    raise OperationError(400, "the body must be a JSON object")


def pydantic_message(error: ValidationError) -> str:
    """`field: problem` for each error, in one line."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in error.errors()
    )


def sdk_handlers(runtime: AgentRuntime) -> dict[tuple[str, str], Handler]:
    """The default handlers of the SDK-owned operations this module provides."""

    async def config_set(request: Any = None) -> dict[str, Any]:
        changes = as_dict(request)
        current = runtime.config.model_dump(exclude_unset=True)
        try:
            runtime.config = type(runtime.config).model_validate({**current, **changes})
        except ValidationError as e:
            raise OperationError(400, f"invalid agent config: {pydantic_message(e)}") from None
        return {"status": "configured", "config": runtime.config.masked()}

    async def config_get(request: Any = None) -> dict[str, Any]:
        return {"config": runtime.config.masked()}

    async def mcp_add(request: Any = None) -> dict[str, Any]:
        body = as_dict(request)
        unknown = set(body) - {"url", "headers", "name"}
        if unknown:
            raise OperationError(
                400, f"unknown field {sorted(unknown)[0]!r}; known: url, headers, name"
            )
        url, headers, name = body.get("url"), body.get("headers"), body.get("name")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise OperationError(400, "'url' must be an http(s) URL")
        if headers is not None and (
            not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values())
        ):
            raise OperationError(400, "'headers' must be an object of strings")
        if name is None:
            name = f"mcp_{len(runtime.mcp_servers) + 1}"
        if not isinstance(name, str) or not name:
            raise OperationError(400, "'name' must be a non-empty string")
        if name in runtime.mcp_servers:
            raise OperationError(409, f"an MCP server named {name!r} is already configured")
        runtime.mcp_servers[name] = {"url": url, "headers": headers}
        return {"status": "added", "name": name}

    async def mcp_list(request: Any = None) -> dict[str, Any]:
        return {
            "mcp_servers": {
                n: {"url": s["url"], "has_headers": bool(s["headers"])}
                for n, s in runtime.mcp_servers.items()
            }
        }

    async def trajectory_get(request: Any = None) -> dict[str, Any]:
        body = as_dict(request)
        if set(body) == {"task_id"}:
            found = runtime.trajectories.get(body["task_id"])
            if found is None:
                raise OperationError(404, f"no trajectory for task {body['task_id']!r}")
            return {"trajectory": found.payload}
        if set(body) == {"context_id"}:
            events: list[Any] = []
            for task_id, task in runtime.tasks.items():
                found = runtime.trajectories.get(task_id)
                if task["contextId"] == body["context_id"] and found is not None:
                    payload = found.payload
                    events.extend(payload if isinstance(payload, list) else [payload])
            return {"trajectory": events}
        raise OperationError(400, f"send one of task_id or context_id; got keys {sorted(body)}")

    async def triggers_register(request: Any = None) -> dict[str, Any]:
        try:
            return runtime.triggers.register(as_dict(request))
        except ValueError as e:
            raise OperationError(400, str(e)) from None

    async def triggers_decide(request: Any = None) -> dict[str, Any]:
        body = as_dict(request)
        turn = body.get("turn")
        if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
            raise OperationError(400, "'turn' must be a positive integer")
        return runtime.triggers.decide(turn, body.get("context_id"))

    async def triggers_state(request: Any = None) -> dict[str, Any]:
        return runtime.triggers.state()

    return {
        ("urn:agentenv:agent-config/v1", "set"): config_set,
        ("urn:agentenv:agent-config/v1", "get"): config_get,
        ("urn:agentenv:mcp-config/v1", "add"): mcp_add,
        ("urn:agentenv:mcp-config/v1", "list"): mcp_list,
        ("urn:agentenv:trajectory/v1", "get"): trajectory_get,
        ("urn:agentenv:triggers/v1", "register"): triggers_register,
        ("urn:agentenv:triggers/v1", "decide"): triggers_decide,
        ("urn:agentenv:triggers/v1", "state"): triggers_state,
    }


class DefaultExtensionHandlers:
    """The SDK's handlers for one served agent, callable from the agent's overrides."""

    def __init__(self, runtime: AgentRuntime, uris: set[str]) -> None:
        from agentenv_protocol.a2a_agent.registry import SDK_PROVIDERS

        self._handlers: dict[tuple[str, str], Handler] = {}
        modules = {SDK_PROVIDERS[uri] for uri in uris if uri in SDK_PROVIDERS}
        for module in sorted(modules):
            if importlib.util.find_spec(module) is None:
                raise RuntimeError(
                    f"the SDK's default handlers for {sorted(u for u in uris if SDK_PROVIDERS.get(u) == module)} "
                    f"come from {module}, which is not installed"
                )
            provided = importlib.import_module(module).sdk_handlers(runtime)
            self._handlers.update({k: v for k, v in provided.items() if k[0] in uris})

    def has(self, reference: OperationReference) -> bool:
        return (reference.uri, reference.name) in self._handlers

    def handler(self, uri: str, operation: str) -> Handler:
        found = self._handlers.get((uri, operation))
        if found is None:
            raise LookupError(f"the SDK has no default handler for {uri} {operation!r}")
        return found

    async def call(self, reference: OperationReference, request: Any = None) -> Any:
        """Run the SDK's default for `reference` (e.g. `TRIGGERS_V1.decide`) on `request`."""
        return await self.handler(reference.uri, reference.name)(request)
