"""What every harness shares: the ask it turns into an invocation, the session it reads back,
and the trajectory events (`model`, `tool`) in the shape the tool loop records."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

#: The environment variable that carries the gateway token; MCP configs name it, never hold it.
TOKEN_ENV = "AGENTENV_GATEWAY_TOKEN"
#: The environment variable that carries the model API key for CLIs that read it from config.
MODEL_KEY_ENV = "AGENTENV_MODEL_KEY"
#: The gateway's MCP server name in every CLI's config.
SERVER = "gateway"


@attrs.frozen(kw_only=True)
class Ask:
    """One prompt for a CLI: where it runs and what it is pointed at."""

    exe: str
    home: str
    prompt: str
    model: str | None = None
    system_prompt: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    mcp_url: str | None = None

    @property
    def text(self) -> str:
        """The prompt with the system prompt in front, for CLIs that take no system prompt."""
        return f"{self.system_prompt}\n\n{self.prompt}" if self.system_prompt else self.prompt


@attrs.frozen(kw_only=True)
class Invocation:
    """What a prompt needs: files to write under the agent's home, argv, environment."""

    files: dict[str, str]
    argv: list[str]
    env: dict[str, str]


@attrs.frozen(kw_only=True)
class Session:
    """A finished run read from the CLI's session log."""

    text: str
    trajectory: list[dict[str, Any]]
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    error: str | None = None


@attrs.define
class Tally:
    """What a session-log reader collects as it goes; `session()` is the result."""

    trajectory: list[dict[str, Any]] = attrs.field(factory=list)
    texts: list[str] = attrs.field(factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    error: str | None = None

    def session(self, text: str | None = None) -> Session:
        """The session; its text is `text`, else the last text the model said."""
        return Session(
            text=(self.texts[-1] if self.texts else "") if text is None else text,
            trajectory=self.trajectory,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            error=self.error,
        )


@attrs.frozen(kw_only=True)
class Harness:
    """One CLI agent. `api` is the model API it speaks (`anthropic`, `openai`, `gemini`)."""

    type: str
    aliases: tuple[str, ...] = ()
    package: str
    version: str
    binary: str
    api: str
    invoke: Callable[[Ask], Invocation]
    parse: Callable[[str], Session]


def lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines log (other lines are skipped)."""
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


def text_of(content: Any) -> str:
    """The text of a content value: a string, a list of blocks, or anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            text_of(c.get("text", c.get("content", ""))) for c in content if isinstance(c, dict)
        )
    return "" if content is None else json.dumps(content)


def model_event(
    content: str | None, calls: Sequence[tuple[Any, Any, Any]] = (), turn: int | None = None
) -> dict[str, Any]:
    """A `model` event; `calls` are (id, name, arguments) of the tool calls it asked for."""
    event: dict[str, Any] = {
        "type": "model",
        "content": content,
        "tool_calls": [{"id": i, "name": n, "arguments": json.dumps(a or {})} for i, n, a in calls],
    }
    if turn is not None:
        event["turn"] = turn
    return event


def tool_event(
    call_id: Any,
    name: Any,
    arguments: Any,
    result: Any,
    is_error: bool,
    turn: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A `tool` event: one tool call and what it returned."""
    event: dict[str, Any] = {
        "type": "tool",
        "id": call_id,
        "name": name,
        "arguments": json.dumps(arguments or {}),
        "result": result,
        "is_error": bool(is_error),
        **extra,
    }
    if turn is not None:
        event["turn"] = turn
    return event
