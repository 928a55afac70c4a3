"""Author an A2A agent as a class: `@a2a_agent(identity=..., config=..., extensions=...)` on an
`AgentEnvAgent` subclass with `async def run(self, request) -> TaskResult` (or an async
generator of `TaskProgress` items ending in a `TaskResult`, which makes it a streaming agent).

    @a2a_agent(identity=AgentIdentity(name="echo", description="Echoes", version="1"))
    class Echo(AgentEnvAgent):
        async def run(self, request: TaskRequest) -> TaskResult:
            return TaskResult.text(request.text)

    Echo().serve()          # or: app = create_app(Echo())

The app is our A2A server (`agentenv_protocol.agent.server.a2a_routes`) plus one route per
extension operation the registry lists.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import typing
import uuid
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import attrs

from agentenv_protocol import jsonrpc
from agentenv_protocol.a2a_agent.defaults import (
    DefaultExtensionHandlers,
    OperationError,
    pydantic_message,
)
from agentenv_protocol.a2a_agent.extensions import (
    AGENT_CONFIG_V1,
    ExtensionActivation,
    ExtensionDefinition,
)
from agentenv_protocol.a2a_agent.registry import (
    ExtensionRegistry,
    RegisteredOperation,
    build_registry,
)
from agentenv_protocol.a2a_agent.services import services_for
from agentenv_protocol.a2a_agent.tasks import AgentConfig
from agentenv_protocol.agent.types import A2A_PATH, DEFAULT_AGENT_PORT

LOG = logging.getLogger("agentenv_protocol.a2a_agent")


@attrs.frozen(kw_only=True)
class AgentIdentity:
    """Who the agent is, as its card says: name, description, version, the media types it
    takes and gives, and its skills (`{id, name, description, tags}` objects)."""

    name: str
    description: str
    version: str = "1.0.0"
    input_modes: tuple[str, ...] = ("text",)
    output_modes: tuple[str, ...] = ("text",)
    skills: tuple[dict[str, Any], ...] = ()
    url: str | None = None

    def __attrs_post_init__(self) -> None:
        self.rpc_path  # noqa: B018 (checks the url now)

    @property
    def rpc_path(self) -> str:
        """Where A2A JSON-RPC is served: `url`'s path (an absolute URL or a path), else /a2a."""
        if self.url is None:
            return A2A_PATH
        if self.url.startswith(("http://", "https://")):
            return urlsplit(self.url).path or A2A_PATH
        if not self.url.startswith("/"):
            raise ValueError(
                f"AgentIdentity.url {self.url!r}: an absolute http(s) URL or a path; a path "
                "must start with '/'"
            )
        return self.url


@attrs.frozen(kw_only=True)
class AgentDefinition:
    """What `@a2a_agent` attached to a class: identity, config class, extensions, lifespan."""

    identity: AgentIdentity
    registry: ExtensionRegistry
    config: type[AgentConfig] | None = None
    streaming: bool = False
    lifespan: Callable[[Any], contextlib.AbstractAsyncContextManager] | None = None

    def card(self, base_url: str, extra: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
        """The agent card; `extra` are the card entries of the SDK's services."""
        ident = self.identity
        skills = list(ident.skills) or [
            {"id": ident.name, "name": ident.name, "description": ident.description, "tags": []}
        ]
        return {
            "name": ident.name,
            "description": ident.description,
            "version": ident.version,
            "protocolVersion": "0.3.0",
            "url": (
                ident.url
                if ident.url and not ident.url.startswith("/")
                else base_url.rstrip("/") + ident.rpc_path
            ),
            "preferredTransport": "JSONRPC",
            "capabilities": {
                "streaming": self.streaming,
                "pushNotifications": False,
                "stateTransitionHistory": False,
                "extensions": [
                    *(e.card_entry(self.config) for e in self.registry.extensions),
                    *extra,
                ],
            },
            "defaultInputModes": list(ident.input_modes),
            "defaultOutputModes": list(ident.output_modes),
            "skills": skills,
        }


class AgentEnvAgent:
    """Base class of an SDK agent: decorate a subclass with `@a2a_agent` and define `run`."""

    __agentenv_definition__: AgentDefinition

    async def run(self, request: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define async run(request)")

    @property
    def default_handlers(self) -> DefaultExtensionHandlers:
        """The SDK's handlers, for an override that keeps the default behaviour."""
        application = getattr(self, "_agentenv_a2a_application", None)
        if application is None:
            raise RuntimeError("default_handlers exist once the agent is served (create_app)")
        return application.default_handlers

    def create_app(self) -> Any:
        return create_app(self)

    def serve(self, *, host: str | None = None, port: int | None = None) -> None:
        serve(self, host=host, port=port)


def a2a_agent(
    *,
    identity: AgentIdentity,
    extensions: Iterable[ExtensionDefinition | ExtensionActivation] = (),
    config: type[AgentConfig] | None = None,
    config_description: str | None = None,
    lifespan: Callable[[Any], contextlib.AbstractAsyncContextManager] | None = None,
) -> Callable[[type], type]:
    """Make an `AgentEnvAgent` subclass an A2A agent; TypeError/ValueError name the mistake."""
    if not isinstance(identity, AgentIdentity):
        raise TypeError(f"identity must be an AgentIdentity; got {type(identity).__name__}")
    activations = []
    for item in extensions:
        if isinstance(item, ExtensionDefinition):
            item = ExtensionActivation(definition=item)
        if not isinstance(item, ExtensionActivation):
            raise TypeError(f"extensions take ExtensionDefinition values; got {item!r}")
        if item.definition.uri == AGENT_CONFIG_V1.uri:
            raise TypeError(
                "agent-config/v1 comes from config=: pass an AgentConfig subclass instead of "
                "listing AGENT_CONFIG_V1"
            )
        activations.append(item)
    if config is not None and not (isinstance(config, type) and issubclass(config, AgentConfig)):
        raise TypeError(f"config must be an AgentConfig subclass; got {config!r}")
    if config is None and config_description is not None:
        raise TypeError("config_description needs config=")

    def decorate(cls: type) -> type:
        if not (isinstance(cls, type) and issubclass(cls, AgentEnvAgent)):
            raise TypeError(f"@a2a_agent decorates an AgentEnvAgent subclass; got {cls!r}")
        run = cls.run
        if run is AgentEnvAgent.run:
            raise TypeError(f"{cls.__name__} must define async def run(self, request)")
        if not (inspect.iscoroutinefunction(run) or inspect.isasyncgenfunction(run)):
            raise TypeError(f"{cls.__name__}.run must be 'async def'")
        cls.__agentenv_definition__ = AgentDefinition(
            identity=identity,
            registry=build_registry(
                cls,
                activations,
                config=config,
                config_description=config_description,
                rpc_path=identity.rpc_path,
            ),
            config=config,
            streaming=inspect.isasyncgenfunction(run),
            lifespan=lifespan,
        )
        return cls

    return decorate


class A2AAgentApplication:
    """One served agent: its runtime state, registry and default handlers (`app.state.
    agentenv_a2a`)."""

    def __init__(self, agent: AgentEnvAgent) -> None:
        from agentenv_protocol.a2a_agent.runtime import AgentRuntime

        self.agent = agent
        self.definition = type(agent).__agentenv_definition__
        self.registry = self.definition.registry
        self.runtime = AgentRuntime(agent)
        uris = {e.definition.uri for e in self.registry.extensions}
        self.default_handlers = DefaultExtensionHandlers(self.runtime, uris)


def create_app(agent: AgentEnvAgent) -> Any:
    """The Starlette app serving `agent`: A2A at /a2a, its card, and its extensions."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    from agentenv_protocol.agent.server import a2a_routes

    definition = getattr(type(agent), "__agentenv_definition__", None)
    if definition is None:
        raise TypeError(f"{type(agent).__name__} is not decorated with @a2a_agent")
    application = A2AAgentApplication(agent)
    agent._agentenv_a2a_application = application  # type: ignore[attr-defined]
    services = services_for(application)
    application.runtime.card_entries = [e for s in services for e in s.card_entries]
    routes = a2a_routes(application.runtime, rpc_path=definition.identity.rpc_path)
    by_path: dict[str, dict[str, RegisteredOperation]] = {}
    for op in application.registry.operations():
        by_path.setdefault(op.definition.path, {})[op.definition.method] = op
    for path, ops in by_path.items():
        routes.append(Route(path, _operation_endpoint(application, ops), methods=list(ops)))
    for service in services:
        routes.extend(service.routes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        import anyio

        async with contextlib.AsyncExitStack() as stack:
            for service in services:
                if service.lifespan is not None:
                    await stack.enter_async_context(service.lifespan(app))
            if definition.lifespan is not None:
                await stack.enter_async_context(definition.lifespan(app))
            async with anyio.create_task_group() as group:
                application.runtime.task_group = group
                try:
                    yield
                finally:
                    application.runtime.task_group = None
                    group.cancel_scope.cancel()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.agentenv_a2a = application
    return app


def _operation_endpoint(
    application: A2AAgentApplication, ops: dict[str, RegisteredOperation]
) -> Callable[[Any], Any]:
    from starlette.responses import JSONResponse, PlainTextResponse, Response

    async def endpoint(request: Any) -> Any:
        op = ops[request.method]
        raw = await request.body()
        body: Any = None
        if raw:
            try:
                body = jsonrpc.loads(raw)
            except ValueError as e:
                return PlainTextResponse(f"the body is not valid JSON: {e}", status_code=400)
        try:
            if op.method_name is None:
                handler = application.default_handlers.handler(op.uri, op.definition.name)
                value = await handler(body)
            else:
                method = getattr(application.agent, op.method_name)
                value = await _call_override(method, op, body, request, application)
        except OperationError as e:
            return PlainTextResponse(e.message, status_code=e.status)
        except Exception:  # a bug in a handler: the caller gets a correlation id, the log the rest
            correlation = uuid.uuid4().hex
            LOG.exception(
                "%s %s failed; correlation id %s", op.uri, op.definition.name, correlation
            )
            return PlainTextResponse(
                f"An unexpected framework error occurred. Correlation ID: {correlation}",
                status_code=500,
            )
        if isinstance(value, Response):
            return value
        if value is None:
            return Response(status_code=204)
        return JSONResponse(value)

    return endpoint


async def _call_override(
    method: Callable[..., Any],
    op: RegisteredOperation,
    body: Any,
    request: Any,
    application: A2AAgentApplication,
) -> Any:
    """Call an agent's operation method with the body as the type its parameter names."""
    from pydantic import BaseModel, ValidationError
    from starlette.requests import Request

    params = list(inspect.signature(method).parameters.values())
    if not params:
        return await method()
    wanted = _parameter_type(method, params[0]) or op.definition.request
    if wanted is None and op.uri == AGENT_CONFIG_V1.uri:
        wanted = application.definition.config
    if wanted is Request:
        return await method(request)
    if isinstance(wanted, type) and attrs.has(wanted):  # the object-transfer requests
        from agentenv_protocol.agent import transfers

        try:
            return await method(transfers.parse(wanted, body if body is not None else {}))
        except transfers.TransferRequestError as e:
            raise OperationError(400, str(e)) from None
    if isinstance(wanted, type) and issubclass(wanted, BaseModel):
        try:
            argument = wanted.model_validate(body if body is not None else {})
        except ValidationError as e:
            raise OperationError(400, f"invalid request: {pydantic_message(e)}") from None
        return await method(argument)
    return await method(body if body is not None else {})


def _parameter_type(method: Callable[..., Any], param: inspect.Parameter) -> Any:
    """The type `param` is annotated with. A string annotation (postponed evaluation) resolves
    against the method's module and then this SDK's names, so a class defined inside a function
    still gets the SDK's request types; None when it names nothing resolvable."""
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return None
    if not isinstance(annotation, str):
        return annotation
    try:
        return typing.get_type_hints(method).get(param.name)
    except Exception:
        pass
    import agentenv_protocol.a2a_agent as sdk

    name = annotation.strip()
    found = getattr(inspect.unwrap(method), "__globals__", {}).get(name)
    if found is None and name in sdk.__all__:
        found = getattr(sdk, name)
    return found


def serve(agent: AgentEnvAgent, *, host: str | None = None, port: int | None = None) -> None:
    """Serve `agent` (blocking) on `A2A_HOST` / `PORT` (or `A2A_PORT`), default 0.0.0.0:8000."""
    import uvicorn

    from agentenv_protocol.serving import uvicorn_options

    host = host or os.environ.get("A2A_HOST") or "0.0.0.0"
    if port is None:
        port = int(os.environ.get("PORT") or os.environ.get("A2A_PORT") or DEFAULT_AGENT_PORT)
    uvicorn.run(create_app(agent), host=host, port=port, log_level="warning", **uvicorn_options())
