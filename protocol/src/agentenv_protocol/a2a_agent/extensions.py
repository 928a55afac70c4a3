"""Extension definitions: an extension is a URI with REST operations under `/ext/...`, each
owned by the SDK (a default handler exists; an agent may override the whole set) or by the
runtime (the agent must implement it). `extension(OP)` and `custom_extension(...)` mark an
agent's methods as the handlers of operations; the registry turns them into routes and card
entries.

    NOTES_V1 = ExtensionDefinition(uri="urn:example:notes/v1", endpoint="/ext/notes",
        core_operations={"list": OperationDefinition(name="list", method="GET",
                                                     path="/ext/notes")})

    @extension(NOTES_V1.list)
    async def list_notes(self) -> dict: ...
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agentenv_protocol.agent.extensions import (
    INSTALL_URI,
    PEER_AGENTS_URI,
    SKILL_CONFIG_URI,
    SNAPSHOT_URI,
)
from agentenv_protocol.agent.types import AGENT_CONFIG_URI, MCP_CONFIG_URI, TRAJECTORY_URI

HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
MARK = "__agentenv_extension__"
RESERVED_URI_PREFIX = "urn:agentenv:"


class ImplementationOwner(enum.Enum):
    """Who implements an operation: the SDK (a default exists) or the agent's runtime."""

    SDK = "sdk"
    RUNTIME = "runtime"


@attrs.frozen(kw_only=True)
class FieldSchema:
    """A request's or response's top-level keys, as the card declares them."""

    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def to_card(self) -> dict[str, Any]:
        card: dict[str, Any] = {"required": list(self.required)}
        if self.optional:
            card["optional"] = list(self.optional)
        return card


@attrs.frozen(kw_only=True)
class RequestVariant:
    """One accepted shape of a request with several (`oneOf` on the card)."""

    name: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class RequestDefinition:
    """A request declared by keys every variant needs plus its variants (`oneOf`)."""

    required: tuple[str, ...] = ()
    variants: tuple[RequestVariant, ...] = ()

    def to_card(self) -> dict[str, Any]:
        card: dict[str, Any] = {"required": list(self.required)} if self.required else {}
        card["oneOf"] = [
            {"required": list(v.required), **({"optional": list(v.optional)} if v.optional else {})}
            for v in self.variants
        ]
        return card


def request_card(request: Any) -> dict[str, Any] | None:
    """The card form of a request declaration: a pydantic model, FieldSchema or variants."""
    if request is None:
        return None
    if isinstance(request, FieldSchema | RequestDefinition):
        return request.to_card()
    fields = getattr(request, "model_fields", None)
    if fields is None:
        raise TypeError(f"a request is a pydantic model or FieldSchema; got {request!r}")
    required = [n for n, f in fields.items() if f.is_required()]
    optional = [n for n, f in fields.items() if not f.is_required()]
    card: dict[str, Any] = {"required": required}
    if optional:
        card["optional"] = optional
    card["schema"] = request.model_json_schema()
    return card


@attrs.frozen(kw_only=True)
class OperationDefinition:
    """One REST operation of an extension: verb, path, owner, request and response shapes."""

    name: str
    method: str
    path: str
    implementation: ImplementationOwner = ImplementationOwner.RUNTIME
    request: Any = None
    response: FieldSchema | None = None
    description: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.method not in HTTP_METHODS:
            raise ValueError(
                f"operation {self.name!r}: method {self.method!r} is not one of "
                f"{', '.join(sorted(HTTP_METHODS))}"
            )
        if not self.path.startswith("/"):
            raise ValueError(f"operation {self.name!r}: path {self.path!r} must start with '/'")


@attrs.frozen(kw_only=True)
class OperationReference:
    """`DEFINITION.<operation>`: names one operation of one extension."""

    definition: ExtensionDefinition
    name: str

    @property
    def uri(self) -> str:
        return self.definition.uri

    @property
    def operation(self) -> OperationDefinition:
        return self.definition.core_operations[self.name]


@attrs.frozen(kw_only=True)
class ExtensionDefinition:
    """An extension: its URI, description, endpoint and operations by name.

    Attribute access names an operation: `AGENT_CONFIG_V1.set` is an `OperationReference`."""

    uri: str
    description: str = ""
    endpoint: str | None = None
    core_operations: Mapping[str, OperationDefinition] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        for key, op in self.core_operations.items():
            if key != op.name:
                raise ValueError(f"{self.uri}: operation {key!r} is named {op.name!r}")

    def __getattr__(self, name: str) -> OperationReference:
        if name.startswith("_") or name in {"uri", "description", "endpoint", "core_operations"}:
            raise AttributeError(name)
        ops = object.__getattribute__(self, "core_operations")
        if name in ops:
            return OperationReference(definition=self, name=name)
        close = difflib.get_close_matches(name, list(ops), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; it has {', '.join(ops) or 'none'}"
        raise AttributeError(f"extension {self.uri!r} has no operation {name!r}{hint}")

    def operation(self, name: str) -> OperationDefinition:
        """The definition of operation `name`; AttributeError with a did-you-mean."""
        return getattr(self, name).operation

    def to_card(self, operations: list[OperationDefinition] | None = None) -> dict[str, Any]:
        """The card entry advertising `operations` (all of them by default)."""
        methods: dict[str, Any] = {}
        for op in operations if operations is not None else self.core_operations.values():
            entry: dict[str, Any] = {"method": op.method}
            if op.path != self.endpoint:
                entry["endpoint"] = op.path
            if op.description:
                entry["description"] = op.description
            request = request_card(op.request)
            if request is not None:
                entry["request"] = request
            if op.response is not None:
                entry["response"] = op.response.to_card()
            methods[op.name] = entry
        params: dict[str, Any] = {"methods": methods}
        if self.endpoint is not None:
            params = {"endpoint": self.endpoint, **params}
        return {
            "uri": self.uri,
            "description": self.description,
            "required": False,
            "params": params,
        }


@attrs.frozen(kw_only=True)
class ExtensionActivation:
    """An extension an agent turns on (`a2a_agent(extensions=...)`); `required` goes on the card."""

    definition: ExtensionDefinition
    required: bool = False


def enable(definition: ExtensionDefinition, *, required: bool = False) -> ExtensionActivation:
    return ExtensionActivation(definition=definition, required=required)


def extension(reference: OperationReference) -> Callable[[Callable], Callable]:
    """Mark an agent method as the handler of `reference` (e.g. `NOTES_V1.create`)."""
    if not isinstance(reference, OperationReference):
        raise TypeError(
            f"extension() takes an operation such as AGENT_CONFIG_V1.set; got {reference!r}"
        )

    def mark(fn: Callable) -> Callable:
        setattr(fn, MARK, reference)
        return fn

    return mark


def custom_extension(
    *,
    uri: str,
    operation: str,
    method: str,
    path: str,
    description: str = "",
    request: Any = None,
    response: FieldSchema | None = None,
) -> Callable[[Callable], Callable]:
    """Mark an agent method as the one operation of a new extension `uri` (not `urn:agentenv:`,
    whose extensions are the SDK's own definitions)."""
    if uri.startswith(RESERVED_URI_PREFIX):
        raise ValueError(
            f"custom_extension cannot redefine {uri}: {RESERVED_URI_PREFIX} extensions are the "
            "SDK's; use @extension(<THE_DEFINITION>.<operation>)"
        )
    op = OperationDefinition(
        name=operation,
        method=method,
        path=path,
        implementation=ImplementationOwner.RUNTIME,
        request=request,
        response=response,
    )
    definition = ExtensionDefinition(
        uri=uri, description=description, endpoint=path, core_operations={operation: op}
    )
    return extension(OperationReference(definition=definition, name=operation))


def _ops(*ops: OperationDefinition) -> dict[str, OperationDefinition]:
    return {op.name: op for op in ops}


SDK, RUNTIME = ImplementationOwner.SDK, ImplementationOwner.RUNTIME

AGENT_CONFIG_V1 = ExtensionDefinition(
    uri=AGENT_CONFIG_URI,
    description="The agent's typed configuration.",
    endpoint="/ext/agent-config",
    core_operations=_ops(
        OperationDefinition(
            name="set", method="POST", path="/ext/agent-config", implementation=SDK
        ),
        OperationDefinition(
            name="get",
            method="GET",
            path="/ext/agent-config",
            implementation=SDK,
            response=FieldSchema(required=("config",)),
        ),
    ),
)
MCP_CONFIG_V1 = ExtensionDefinition(
    uri=MCP_CONFIG_URI,
    description="The MCP servers the agent uses (with their auth headers).",
    endpoint="/ext/mcp-config",
    core_operations=_ops(
        OperationDefinition(
            name="add",
            method="POST",
            path="/ext/mcp-config",
            implementation=SDK,
            request=FieldSchema(required=("url",), optional=("headers", "name")),
        ),
        OperationDefinition(
            name="list",
            method="GET",
            path="/ext/mcp-config",
            implementation=SDK,
            response=FieldSchema(required=("mcp_servers",)),
        ),
    ),
)
TRAJECTORY_V1 = ExtensionDefinition(
    uri=TRAJECTORY_URI,
    description="What the agent did for a task, in its own format.",
    endpoint="/ext/trajectory",
    core_operations=_ops(
        OperationDefinition(
            name="get",
            method="POST",
            path="/ext/trajectory",
            implementation=SDK,
            request=RequestDefinition(
                variants=(
                    RequestVariant(name="task", required=("task_id",)),
                    RequestVariant(name="context", required=("context_id",)),
                )
            ),
        ),
    ),
)
TRIGGERS_V1 = ExtensionDefinition(
    uri="urn:agentenv:triggers/v1",
    description="Turn-based triggers that speak or end the conversation.",
    endpoint="/ext/triggers",
    core_operations=_ops(
        OperationDefinition(
            name="register",
            method="POST",
            path="/ext/triggers",
            implementation=SDK,
            request=FieldSchema(required=("triggers",)),
        ),
        OperationDefinition(
            name="decide",
            method="POST",
            path="/ext/triggers/decide",
            implementation=SDK,
            request=FieldSchema(required=("turn",), optional=("context_id",)),
            response=FieldSchema(required=("parts", "done", "fired")),
        ),
        OperationDefinition(
            name="state",
            method="GET",
            path="/ext/triggers",
            implementation=SDK,
            response=FieldSchema(required=("triggers", "firing_log")),
        ),
    ),
)
SKILL_CONFIG_V1 = ExtensionDefinition(
    uri=SKILL_CONFIG_URI,
    description="Skills (SKILL.md) the agent may use.",
    endpoint="/ext/skill-config",
    core_operations=_ops(
        OperationDefinition(
            name="add",
            method="POST",
            path="/ext/skill-config",
            request=RequestDefinition(
                required=("name", "description"),
                variants=(
                    RequestVariant(name="inline", required=("skill_md",)),
                    RequestVariant(name="bundle", required=("skill_bundle",)),
                ),
            ),
            response=FieldSchema(required=("name",)),
        ),
        OperationDefinition(
            name="list",
            method="GET",
            path="/ext/skill-config",
            response=FieldSchema(required=("skills",)),
        ),
    ),
)
SNAPSHOT_V1 = ExtensionDefinition(
    uri=SNAPSHOT_URI,
    description="Save and load the agent's state as objects.",
    endpoint="/ext/snapshot",
    core_operations=_ops(
        OperationDefinition(
            name="save",
            method="POST",
            path="/ext/snapshot",
            request=FieldSchema(required=("context_id", "objects")),
            response=FieldSchema(required=("context_id", "objects")),
        ),
        OperationDefinition(
            name="load",
            method="PUT",
            path="/ext/snapshot",
            request=FieldSchema(required=("objects",), optional=("target_context_id",)),
            response=FieldSchema(required=("context_id",)),
        ),
    ),
)
PEER_AGENTS_V1 = ExtensionDefinition(
    uri=PEER_AGENTS_URI,
    description="The other agents this agent may delegate to.",
    endpoint="/ext/peer-agents",
    core_operations=_ops(
        OperationDefinition(
            name="set",
            method="POST",
            path="/ext/peer-agents",
            implementation=SDK,
            request=FieldSchema(required=("peers",)),
        ),
        OperationDefinition(
            name="list",
            method="GET",
            path="/ext/peer-agents",
            implementation=SDK,
            response=FieldSchema(required=("peers",)),
        ),
    ),
)
ATTRIBUTION_PROBE_V1 = ExtensionDefinition(
    uri="urn:agentenv:attribution-probe/v1",
    description="Answers which model and harness produced the agent's answers.",
    endpoint="/ext/attribution-probe",
    core_operations=_ops(
        OperationDefinition(name="get", method="GET", path="/ext/attribution-probe"),
    ),
)
INSTALL_V1 = ExtensionDefinition(
    uri=INSTALL_URI,
    description="The agent installs what a task needs before it runs.",
)

STANDARD_EXTENSIONS: tuple[ExtensionDefinition, ...] = (
    AGENT_CONFIG_V1,
    MCP_CONFIG_V1,
    SKILL_CONFIG_V1,
    TRAJECTORY_V1,
    SNAPSHOT_V1,
    PEER_AGENTS_V1,
    ATTRIBUTION_PROBE_V1,
    TRIGGERS_V1,
    INSTALL_V1,
)
