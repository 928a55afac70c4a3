"""What an agent's `run` receives (`TaskRequest`) and gives back (`TaskResult`, or a stream of
`TaskProgress` items ending in one `TaskResult`), and the typed config it is configured with.

`AgentConfig` is a pydantic model (frozen, unknown keys refused) because its JSON schema is
what the card advertises for agent-config/v1; a field typed `WriteOnly[T]` is accepted but read
back masked as "***".
"""

from __future__ import annotations

import copy
import enum
from typing import Annotated, Any, Generic, TypeVar, Union

import attrs
from pydantic import BaseModel, ConfigDict

from agentenv_protocol.a2a_agent.parts import DataPart, FilePart, TaskPart, TextPart

MASK = "***"


def _copied(value: Any) -> Any:
    return copy.deepcopy(value)


def _copied_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(copy.deepcopy(list(value)))


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
    """What one task cost: tool calls, model tokens, and whatever the provider reported."""

    tool_call_count: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    provider_details: dict[str, Any] | None = attrs.field(default=None, converter=_copied)

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, as JSON."""
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


@attrs.frozen(kw_only=True)
class NativeTrajectory:
    """The agent's own record of a task, in its own `format`, served by trajectory/v1."""

    format: str
    payload: Any


class TaskOutcome(enum.Enum):
    """How a task ended; the value is its A2A task state."""

    SUCCEEDED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


ERROR_TYPES = ("agent_error", "infra_error")


@attrs.frozen(kw_only=True)
class TaskError:
    """Why a task failed: a stable `code`, a `message` for people, and whose fault it was
    (`agent_error`: the agent or its model; `infra_error`: what it runs on)."""

    code: str
    message: str
    error_type: str = "agent_error"

    def __attrs_post_init__(self) -> None:
        if self.error_type not in ERROR_TYPES:
            raise ValueError(
                f"error_type must be one of {list(ERROR_TYPES)}; got {self.error_type!r}"
            )

    def to_data(self) -> dict[str, str]:
        return {
            "error_type": self.error_type,
            "error_code": self.code,
            "error_message": self.message,
        }


@attrs.frozen(kw_only=True)
class TaskResult:
    """A task's end: its outcome, the parts of the agent's answer and what it reports.

    Every factory and the builder construct through here, so one set of checks holds: parts
    are parts, a success has at least one, a failure has its error."""

    outcome: TaskOutcome
    parts: tuple[TaskPart, ...] = attrs.field(default=(), converter=tuple)
    session_ref: str | None = None
    usage: Usage | None = None
    native_trajectory: NativeTrajectory | None = None
    error: TaskError | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.outcome, TaskOutcome):
            raise TypeError(f"outcome must be a TaskOutcome; got {self.outcome!r}")
        for index, part in enumerate(self.parts):
            if not isinstance(part, TextPart | DataPart | FilePart):
                raise TypeError(f"TaskResult.parts[{index}] is a {type(part).__name__}, not a part")
        if self.outcome is TaskOutcome.SUCCEEDED and not self.parts:
            raise ValueError("a succeeded TaskResult requires at least one part")
        if (self.outcome is TaskOutcome.FAILED) != (self.error is not None):
            raise ValueError("a TaskResult has an error exactly when it failed")

    @classmethod
    def text(cls, text: str, **reported: Any) -> TaskResult:
        """A succeeded task answering `text` (`session_ref`, `usage`, `native_trajectory`)."""
        return cls(outcome=TaskOutcome.SUCCEEDED, parts=(TextPart(text=text),), **reported)

    @classmethod
    def success(cls, *, parts: Any, **reported: Any) -> TaskResult:
        return cls(outcome=TaskOutcome.SUCCEEDED, parts=parts, **reported)

    @classmethod
    def failure(
        cls,
        code: str,
        message: str,
        *,
        error_type: str = "agent_error",
        parts: Any = (),
        **reported: Any,
    ) -> TaskResult:
        """A failed task; the caller gets `parts` and a data part naming the error."""
        error = TaskError(code=code, message=message, error_type=error_type)
        return cls(outcome=TaskOutcome.FAILED, parts=parts, error=error, **reported)

    @classmethod
    def builder(cls) -> TaskResultBuilder:
        return TaskResultBuilder()

    def wire_parts(self) -> list[dict[str, Any]]:
        """The parts of the task's final message: the answer, then the error if it failed."""
        wire = [p.to_wire() for p in self.parts]
        if self.error is not None:
            wire.append(DataPart(data=self.error.to_data()).to_wire())
        return wire


class TaskResultBuilder:
    """Builds a `TaskResult` one call at a time (each call returns the builder); `build()`
    refuses a result whose outcome was never set."""

    def __init__(self) -> None:
        self._outcome: TaskOutcome | None = None
        self._error: TaskError | None = None
        self._parts: list[TaskPart] = []
        self._reported: dict[str, Any] = {}

    def succeeded(self) -> TaskResultBuilder:
        self._outcome, self._error = TaskOutcome.SUCCEEDED, None
        return self

    def failed(
        self, code: str, message: str, *, error_type: str = "agent_error"
    ) -> TaskResultBuilder:
        self._outcome = TaskOutcome.FAILED
        self._error = TaskError(code=code, message=message, error_type=error_type)
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
        self._reported["session_ref"] = ref
        return self

    def usage(self, usage: Usage) -> TaskResultBuilder:
        self._reported["usage"] = usage
        return self

    def native_trajectory(self, *, format: str, payload: Any) -> TaskResultBuilder:
        self._reported["native_trajectory"] = NativeTrajectory(format=format, payload=payload)
        return self

    def build(self) -> TaskResult:
        if self._outcome is None:
            raise ValueError("outcome is required: call succeeded() or failed(code, message)")
        return TaskResult(
            outcome=self._outcome, parts=self._parts, error=self._error, **self._reported
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
    `mcp_servers` maps a name to `{"url", "headers"}` (headers None when none were given).
    The containers are the request's own copies: changing them changes nothing else."""

    parts: tuple[TaskPart, ...]
    config: ConfigT
    context_id: str
    task_id: str
    message_id: str | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict, converter=_copied)
    session_ref: str | None = None
    mcp_servers: dict[str, dict[str, Any]] = attrs.field(factory=dict, converter=_copied)
    skills: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_copied_tuple)

    @property
    def text(self) -> str:
        """The text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))
