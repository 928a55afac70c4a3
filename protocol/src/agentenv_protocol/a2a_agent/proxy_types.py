"""The wire shapes of `urn:agentenv:proxy/v1`: the actions a driver asks the proxy to run and
the state it answers with (`ProxyActionState`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

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


def proxy_params() -> dict[str, Any]:
    """proxy/v1 as advertised on the card: one POST endpoint per operation."""
    required = {
        "claim": ["token"],
        "next": ["token"],
        "tools": ["token", "task_id"],
        "act": ["token", "task_id", "action_id", "action"],
        "result": ["token", "action_id"],
        "record": ["token", "task_id", "message"],
        "reply": ["token", "task_id"],
    }
    optional = {"next": ["after"], "record": ["model", "usage"], "reply": ["parts", "error"]}
    return {
        "endpoint": "/ext/proxy",
        "methods": {
            op: {
                "method": "POST",
                "endpoint": f"/ext/proxy/{op}",
                "request": {"required": required[op], "optional": optional.get(op, [])},
            }
            for op in OPERATIONS
        },
    }
