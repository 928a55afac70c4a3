"""The wire shapes of `urn:agentenv:proxy/v1`: the actions a driver asks the proxy to run and
the state it answers with (`ProxyActionState`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from agentenv_protocol.a2a_agent.extensions import (
    ExtensionDefinition,
    FieldSchema,
    OperationDefinition,
)

OPERATIONS = ("act", "claim", "next", "record", "reply", "result", "tools")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BashAction(_Strict):
    """Run `command` with the proxy's shell, in its folder."""

    kind: Literal["bash"]
    command: str = Field(min_length=1)
    timeout_seconds: float | None = Field(default=None, gt=0)


class ToolAction(_Strict):
    """Call the tool `name` of the env server registered as `server`."""

    kind: Literal["tool"]
    server: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: float | None = Field(default=None, gt=0)


Action = Annotated[BashAction | ToolAction, Field(discriminator="kind")]


class _ActionRequest(_Strict):
    action: Action


class BashResult(BaseModel):
    """What a command did; no `exit_code` when it was stopped, 126 when it couldn't start."""

    kind: Literal["bash"] = "bash"
    exit_code: int | None = None
    stdout: str
    stderr: str
    timed_out: bool


class ToolCallResult(BaseModel):
    """A tool's MCP content blocks and its error flag."""

    kind: Literal["tool"] = "tool"
    content: list[dict[str, Any]]
    is_error: bool


class ProxyActionState(BaseModel):
    """An action as `act` and `result` answer it: `result` only once it is `done`."""

    done: bool
    result: Annotated[BashResult | ToolCallResult, Field(discriminator="kind")] | None = None

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def parse_action(value: Any) -> BashAction | ToolAction:
    """The action `value` describes; ValueError naming the field that is wrong."""
    try:
        return _ActionRequest.model_validate({"action": value}).action
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in e.errors()
        )
        raise ValueError(f"bad action ({problems})") from None


def text_parts(parts: Any) -> bool:
    """Whether `parts` is a non-empty list of A2A text parts (the only content the proxy
    carries)."""
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(
            isinstance(p, dict) and p.get("kind") == "text" and isinstance(p.get("text"), str)
            for p in parts
        )
    )


def result_failed(result: BashResult | ToolCallResult) -> bool:
    """An error in the trajectory: a tool error, a command that timed out or exited nonzero."""
    if isinstance(result, ToolCallResult):
        return result.is_error
    return result.timed_out or result.exit_code != 0


class AgentCardDocument(RootModel[dict[str, Any]]):
    """The agent card as a model (`model_dump(mode="json")` gives the card JSON)."""


_REQUESTS = {
    "claim": FieldSchema(required=("token",)),
    "next": FieldSchema(required=("token",), optional=("after",)),
    "tools": FieldSchema(required=("token", "task_id")),
    "act": FieldSchema(required=("token", "task_id", "action_id", "action")),
    "result": FieldSchema(required=("token", "action_id")),
    "record": FieldSchema(required=("token", "task_id", "message"), optional=("model", "usage")),
    "reply": FieldSchema(required=("token", "task_id"), optional=("parts", "error")),
}

#: `urn:agentenv:proxy/v1`: one POST endpoint per operation, under `/ext/proxy`.
PROXY_V1 = ExtensionDefinition(
    uri="urn:agentenv:proxy/v1",
    description="A driver outside the sandbox answers this agent's turns.",
    endpoint="/ext/proxy",
    core_operations={
        op: OperationDefinition(
            name=op, method="POST", path=f"/ext/proxy/{op}", request=_REQUESTS[op]
        )
        for op in OPERATIONS
    },
)
