"""The registry of an agent class: which extensions it turns on, which method handles each
operation (the agent's own or the SDK's default), and the card entries they make.

It is built once, when `@a2a_agent` decorates the class, so a mistake (a runtime operation
left unimplemented, half of an SDK-owned set overridden, two operations on one route) fails at
import time with a message naming the class, the extension and the operation.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

import attrs

from agentenv_protocol.a2a_agent.extensions import (
    AGENT_CONFIG_V1,
    MARK,
    ExtensionActivation,
    ExtensionDefinition,
    ImplementationOwner,
    OperationDefinition,
    OperationReference,
)
from agentenv_protocol.agent.types import A2A_PATH, AGENT_CARD_PATH, HEALTH_PATH, LEGACY_CARD_PATH

#: The paths the A2A server itself serves, which no operation may take.
FRAMEWORK_ROUTES: dict[str, str] = {
    A2A_PATH: "A2A JSON-RPC",
    AGENT_CARD_PATH: "agent card",
    LEGACY_CARD_PATH: "agent card",
    HEALTH_PATH: "health",
}

#: Extensions whose SDK-owned operations have default handlers, and the module providing
#: them: `sdk_handlers(runtime) -> {operation name: async handler(request)}`.
SDK_PROVIDERS: dict[str, str] = {
    "urn:agentenv:agent-config/v1": "agentenv_protocol.a2a_agent.defaults",
    "urn:agentenv:mcp-config/v1": "agentenv_protocol.a2a_agent.defaults",
    "urn:agentenv:trajectory/v1": "agentenv_protocol.a2a_agent.defaults",
    "urn:agentenv:triggers/v1": "agentenv_protocol.a2a_agent.defaults",
    "urn:agentenv:peer-agents/v1": "agentenv_protocol.a2a_agent.peer_agents",
}


@attrs.frozen(kw_only=True)
class RegisteredOperation:
    """One served operation: its definition and the agent method handling it (None: the
    SDK's default handler)."""

    uri: str
    definition: OperationDefinition
    method_name: str | None = None

    @property
    def overridden(self) -> bool:
        return (
            self.method_name is not None
            and self.definition.implementation is ImplementationOwner.SDK
        )


@attrs.frozen(kw_only=True)
class RegisteredExtension:
    """One extension the agent serves, as advertised on its card."""

    definition: ExtensionDefinition
    required: bool = False
    operations: tuple[RegisteredOperation, ...] = ()
    description: str | None = None

    def card_entry(self, config: type | None = None) -> dict[str, Any]:
        entry = self.definition.to_card([op.definition for op in self.operations])
        entry["required"] = self.required
        if self.description:
            entry["description"] = self.description
        if self.definition.uri == AGENT_CONFIG_V1.uri and config is not None:
            secret = config.write_only_fields()
            schema = config.model_json_schema()
            for name in secret:  # pydantic drops writeOnly from optional fields' anyOf
                schema.get("properties", {}).get(name, {})["writeOnly"] = True
            entry["params"]["methods"]["set"]["request"] = {
                "supported": list(config.model_fields),
                "schema": schema,
            }
        return entry


@attrs.frozen(kw_only=True)
class ExtensionRegistry:
    """Every extension an agent class serves, in card order."""

    agent_name: str
    extensions: tuple[RegisteredExtension, ...] = ()
    marked: tuple[tuple[str, str, str], ...] = ()  # (uri, operation, method name) in order

    def get(self, uri: str) -> RegisteredExtension | None:
        return next((e for e in self.extensions if e.definition.uri == uri), None)

    def operations(self) -> list[RegisteredOperation]:
        return [op for e in self.extensions for op in e.operations]

    def conformance(self) -> dict[str, Any]:
        """What the agent changed of the SDK's standard behaviour (for reviewers)."""
        overridden = {(op.uri, op.definition.name) for op in self.operations() if op.overridden}
        return {
            "standard_operation_overrides": [
                {"uri": uri, "operation": name}
                for uri, name, _ in self.marked
                if (uri, name) in overridden
            ]
        }


def marked_methods(cls: type) -> list[tuple[OperationReference, str]]:
    """The methods of `cls` (and its bases) marked with `extension(...)`, in definition order;
    a subclass's method replaces its base's for the same operation."""
    found: dict[tuple[str, str], tuple[OperationReference, str]] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            ref = getattr(value, MARK, None)
            if isinstance(ref, OperationReference):
                found[(ref.uri, ref.name)] = (ref, attr)
    return list(found.values())


def build_registry(
    cls: type,
    activations: Iterable[ExtensionActivation],
    *,
    config: type | None = None,
    config_description: str | None = None,
    rpc_path: str = A2A_PATH,
) -> ExtensionRegistry:
    """The registry of agent class `cls`; ValueError naming what is wrong."""
    name = cls.__name__
    active: dict[str, tuple[ExtensionDefinition, bool, str | None]] = {}
    if config is not None:
        active[AGENT_CONFIG_V1.uri] = (AGENT_CONFIG_V1, False, config_description)
    for activation in activations:
        active[activation.definition.uri] = (activation.definition, activation.required, None)
    handlers: dict[tuple[str, str], str] = {}
    marked = marked_methods(cls)
    for ref, attr in marked:
        if not inspect.iscoroutinefunction(getattr(cls, attr)):
            raise ValueError(
                f"{name}.{attr} handles {ref.uri} {ref.name!r} and must be an async function"
            )
        known = active.get(ref.uri)
        if known is not None and known[0] is not ref.definition and known[0] != ref.definition:
            raise ValueError(f"{name}.{attr}: extension {ref.uri!r} is defined twice, differently")
        if known is None:
            if ref.uri == AGENT_CONFIG_V1.uri:
                raise ValueError(
                    f"{name}.{attr} overrides agent-config/v1 but the agent has no "
                    "config=; pass an AgentConfig subclass to @a2a_agent"
                )
            active[ref.uri] = (ref.definition, False, None)
        handlers[(ref.uri, ref.name)] = attr
    registered = []
    routes: dict[tuple[str, str], str] = {}
    for uri, (definition, required, description) in active.items():
        ops = []
        sdk_ops = [
            o
            for o in definition.core_operations.values()
            if o.implementation is ImplementationOwner.SDK
        ]
        overridden = [o.name for o in sdk_ops if (uri, o.name) in handlers]
        if overridden and len(overridden) != len(sdk_ops):
            missing = [o.name for o in sdk_ops if o.name not in overridden]
            raise ValueError(
                f"{name} overrides {', '.join(overridden)} of {uri} but not "
                f"{', '.join(missing)}: the SDK's operations of an extension are overridden "
                "together (call self.default_handlers.call(...) to keep a default)"
            )
        if sdk_ops and not overridden and uri not in SDK_PROVIDERS:
            raise ValueError(f"{name}: the SDK has no default handlers for {uri}")
        for op in definition.core_operations.values():
            attr = handlers.get((uri, op.name))
            if attr is None and op.implementation is ImplementationOwner.RUNTIME:
                raise ValueError(
                    f"{name} turns on {uri} but does not implement its operation "
                    f"{op.name!r}: mark a method with @extension(<definition>.{op.name})"
                )
            taken = {**FRAMEWORK_ROUTES, rpc_path: "A2A JSON-RPC"}
            if op.path in taken:
                raise ValueError(
                    f"{name}: {uri} {op.name!r} at {op.path} conflicts with the "
                    f"{taken[op.path]} route"
                )
            key = (op.method, op.path)
            if key in routes:
                raise ValueError(
                    f"{name}: {op.method} {op.path} is claimed by both {routes[key]} and "
                    f"{uri} {op.name}"
                )
            routes[key] = f"{uri} {op.name}"
            ops.append(RegisteredOperation(uri=uri, definition=op, method_name=attr))
        registered.append(
            RegisteredExtension(
                definition=definition,
                required=required,
                operations=tuple(ops),
                description=description,
            )
        )
    return ExtensionRegistry(
        agent_name=name,
        extensions=tuple(registered),
        marked=tuple((ref.uri, ref.name, attr) for ref, attr in marked),
    )
