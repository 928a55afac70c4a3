"""What an agent's `run` receives (`TaskRequest`) and gives back (`TaskResult`, or a stream of
`TaskProgress` items ending in one `TaskResult`), and the typed config it is configured with.

`AgentConfig` is a pydantic model (frozen, unknown keys refused) because its JSON schema is
what the card advertises for agent-config/v1; a field typed `WriteOnly[T]` is accepted but read
back masked as "***".
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Generic, TypeVar, Union

import attrs
from pydantic import BaseModel, ConfigDict

from agentenv_protocol.a2a_agent.parts import DataPart, FilePart, TaskPart, TextPart

MASK = "***"


class _WriteOnlyMarker:
    """Marks a config field as a secret: in the schema as `writeOnly`, masked on read-back."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        schema = handler.resolve_ref_schema(schema) if "$ref" in schema else schema
        schema["writeOnly"] = True
        return schema


WRITE_ONLY = _WriteOnlyMarker()


class WriteOnly:
    """`WriteOnly[str | None]`: a config field that is set but never read back in clear."""

    def __class_getitem__(cls, item: Any) -> Any:
        return Annotated[item, WRITE_ONLY]


class AgentConfig(BaseModel):
    """Base of an agent's typed config; every field is advertised by agent-config/v1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def write_only_fields(cls) -> frozenset[str]:
        return frozenset(
            name
            for name, field in cls.model_fields.items()
            if any(m is WRITE_ONLY for m in field.metadata)
        )

    def masked(self) -> dict[str, Any]:
        """The fields that were set, as JSON, with write-only ones shown as "***"."""
        secret = self.write_only_fields()
        return {
            name: (MASK if name in secret and value is not None else value)
            for name, value in self.model_dump(mode="json", exclude_unset=True).items()
        }


ConfigT = TypeVar("ConfigT", bound=AgentConfig)


@attrs.frozen(kw_only=True)
class Usage:
    """What one task cost: tool calls and model tokens."""

    tool_call_count: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


@attrs.frozen(kw_only=True)
class NativeTrajectory:
    """The agent's own record of a task, in its own `format`, served by trajectory/v1."""

    format: str
    payload: Any


class TaskOutcome(enum.Enum):
    """How a task ended, as its A2A state."""

    COMPLETED = "completed"
    FAILED = "failed"
    INPUT_REQUIRED = "input-required"
    REJECTED = "rejected"
    CANCELED = "canceled"


@attrs.frozen(kw_only=True)
class TaskError:
    """Why a task failed; `message` reaches the caller as the task's text."""

    message: str
    code: str = "agent_error"


@attrs.frozen(kw_only=True)
class TaskResult:
    """A task's end: its outcome, the parts of the agent's answer and what it reports."""

    outcome: TaskOutcome = TaskOutcome.COMPLETED
    parts: tuple[TaskPart, ...] = ()
    session_ref: str | None = None
    usage: Usage | None = None
    native_trajectory: NativeTrajectory | None = None
    error: TaskError | None = None

    def __attrs_post_init__(self) -> None:
        for index, part in enumerate(self.parts):
            if not isinstance(part, TextPart | DataPart | FilePart):
                raise TypeError(f"TaskResult.parts[{index}] is a {type(part).__name__}, not a part")

    @classmethod
    def text(cls, text: str) -> TaskResult:
        """A completed task answering `text`."""
        return cls(parts=(TextPart(text=text),))

    @classmethod
    def success(cls, *, parts: tuple[TaskPart, ...] | list[TaskPart] = (), **kwargs: Any):
        return cls(parts=tuple(parts), **kwargs)

    @classmethod
    def failure(cls, message: str, *, code: str = "agent_error") -> TaskResult:
        """A failed task; the caller sees `message`."""
        return cls(
            outcome=TaskOutcome.FAILED,
            parts=(TextPart(text=message),),
            error=TaskError(message=message, code=code),
        )

    @classmethod
    def builder(cls) -> TaskResultBuilder:
        return TaskResultBuilder()


class TaskResultBuilder:
    """Builds a `TaskResult` one call at a time (each call returns the builder)."""

    def __init__(self) -> None:
        self._outcome = TaskOutcome.COMPLETED
        self._error: TaskError | None = None
        self._parts: list[TaskPart] = []
        self._session_ref: str | None = None
        self._usage: Usage | None = None
        self._trajectory: NativeTrajectory | None = None

    def succeeded(self) -> TaskResultBuilder:
        self._outcome, self._error = TaskOutcome.COMPLETED, None
        return self

    def failed(self, message: str, *, code: str = "agent_error") -> TaskResultBuilder:
        self._outcome, self._error = TaskOutcome.FAILED, TaskError(message=message, code=code)
        return self

    def add_part(self, part: TaskPart) -> TaskResultBuilder:
        self._parts.append(part)
        return self

    def add_text(self, text: str) -> TaskResultBuilder:
        return self.add_part(TextPart(text=text))

    def add_data(self, data: dict[str, Any]) -> TaskResultBuilder:
        return self.add_part(DataPart(data=data))

    def add_structured_output(self, value: Any) -> TaskResultBuilder:
        """A data part `{"structured_output": value}`."""
        return self.add_part(DataPart(data={"structured_output": value}))

    def session_ref(self, ref: str | None) -> TaskResultBuilder:
        self._session_ref = ref
        return self

    def usage(self, usage: Usage) -> TaskResultBuilder:
        self._usage = usage
        return self

    def native_trajectory(self, *, format: str, payload: Any) -> TaskResultBuilder:
        self._trajectory = NativeTrajectory(format=format, payload=payload)
        return self

    def build(self) -> TaskResult:
        return TaskResult(
            outcome=self._outcome,
            parts=tuple(self._parts),
            session_ref=self._session_ref,
            usage=self._usage,
            native_trajectory=self._trajectory,
            error=self._error,
        )


@attrs.frozen(kw_only=True)
class TaskProgress:
    """An interim update a streaming agent yields before its `TaskResult`."""

    parts: tuple[TaskPart, ...] = ()

    @classmethod
    def text(cls, text: str) -> TaskProgress:
        return cls(parts=(TextPart(text=text),))


TaskStreamItem = Union[TaskProgress, TaskResult]  # noqa: UP007 (a runtime alias)


@attrs.frozen(kw_only=True)
class TaskRequest(Generic[ConfigT]):
    """One A2A message to the agent: its parts, the typed config, and where it belongs.

    `session_ref` is what the agent's last result in this context named as its own session;
    `mcp_servers` maps a name to `{"url", "headers"}` (headers None when none were given)."""

    parts: tuple[TaskPart, ...]
    config: ConfigT
    context_id: str
    task_id: str
    message_id: str | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)
    session_ref: str | None = None
    mcp_servers: dict[str, dict[str, Any]] = attrs.field(factory=dict)

    @property
    def text(self) -> str:
        """The text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))
