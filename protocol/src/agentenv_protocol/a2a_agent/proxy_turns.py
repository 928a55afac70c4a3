"""The proxy's bookkeeping: an open turn (one A2A task a driver answers) and the actions it
runs, and the A2A task a turn ends as."""

from __future__ import annotations

import secrets
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import anyio
import attrs

from agentenv_protocol.a2a_agent.proxy_record import ExpectedCall, as_json, span, span_id
from agentenv_protocol.a2a_agent.proxy_shell import Command
from agentenv_protocol.a2a_agent.proxy_types import (
    BashAction,
    BashResult,
    ToolAction,
    ToolCallResult,
)
from agentenv_protocol.agent.types import McpServer, Usage


class Refused(Exception):
    """A driver call the proxy answers with an HTTP error `status` and `message`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@attrs.define(eq=False)
class Turn:
    """An open turn: what the driver sees of it, the env servers it may use (one session each,
    opened on first use), the tool calls it must still run, and its trajectory so far."""

    task_id: str
    task: dict[str, Any]  # the A2A task it ends (kept here: the agent keeps only recent tasks)
    context_id: str
    parts: list[dict[str, Any]]
    system_prompt: str | None
    skills: list[dict[str, str]]
    servers: dict[str, McpServer]
    trace_id: str = attrs.Factory(lambda: secrets.token_hex(16))
    span_id: str = attrs.Factory(span_id)
    started: float = attrs.Factory(time.time)
    spans: list[dict[str, Any]] = attrs.Factory(list)
    sessions: dict[str, Any] = attrs.Factory(dict)
    session_locks: dict[str, anyio.Lock] = attrs.Factory(dict)
    tools: list[dict[str, Any]] | None = None
    tools_lock: anyio.Lock = attrs.Factory(anyio.Lock)
    record_lock: anyio.Lock = attrs.Factory(anyio.Lock)
    expected: list[ExpectedCall] | None = None  # None until the turn records a model call
    actions: dict[str, Action] = attrs.Factory(dict)
    usage: Usage = attrs.Factory(Usage)
    closed: bool = False
    settled: anyio.Event = attrs.Factory(anyio.Event)

    def check_open(self) -> None:
        if self.closed:
            raise Refused(404, f"turn {self.task_id!r} is over")

    def check_all_run(self, what: str) -> None:
        """`Refused` 409 while tool calls of the last recorded model call haven't run."""
        if self.expected:
            calls = ", ".join(call.name for call in self.expected)
            raise Refused(
                409,
                f"can't {what}: the last recorded model call's tool calls haven't all run ({calls})",
            )

    def take_expected(self, action: BashAction | ToolAction) -> None:
        """Once a model call is recorded, `action` must be one of its calls still to run (it
        is then taken off the list); `Refused` 409 otherwise."""
        if self.expected is None:
            return
        match = next((call for call in self.expected if call.matches(action)), None)
        if match is None:
            raise Refused(
                409,
                f"the {action.kind} action isn't one of the tool calls the last recorded model "
                "call made that haven't run",
            )
        self.expected.remove(match)

    @property
    def text(self) -> str:
        return "\n".join(part["text"] for part in self.parts)

    def wire(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "context_id": self.context_id,
            "parts": self.parts,
            "system_prompt": self.system_prompt,
            "skills": self.skills,
        }


@attrs.define(eq=False)
class Action:
    """One action a driver asked a turn to run; `done` is set when it ended or was stopped."""

    action_id: str
    turn: Turn
    request: BashAction | ToolAction
    started: float = attrs.Factory(time.time)
    result: BashResult | ToolCallResult | None = None
    stopped: bool = False
    scope: anyio.CancelScope | None = None
    command: Command | None = None
    done: anyio.Event = attrs.Factory(anyio.Event)

    def stop(self) -> None:
        """Stop what runs: the command's whole process group, or the pending tool call."""
        self.stopped = True
        if self.command is not None:
            self.command.kill()
        if self.scope is not None:
            self.scope.cancel()


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def new_task(message: dict[str, Any], context_id: str) -> dict[str, Any]:
    """The A2A task a message opens, working until its turn ends."""
    task_id = uuid.uuid4().hex
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context_id,
        "status": {"state": "working", "timestamp": now()},
        "history": [dict(message, contextId=context_id, taskId=task_id)],
    }


def finish_task(
    task: dict[str, Any],
    state: str,
    parts: list[dict[str, Any]],
    usage: Usage,
    failure: tuple[str, str] | None = None,
) -> None:
    """End `task` in `state` with the agent message `parts` (plus usage and any failure)."""
    data: list[dict[str, Any]] = [{"kind": "data", "data": {"usage": usage.to_json()}}]
    if failure is not None:
        code, message = failure
        data.append(
            {
                "kind": "data",
                "data": {"failure": {"class": "agent", "code": code, "message": message}},
            }
        )
    reply = {
        "kind": "message",
        "role": "agent",
        "messageId": uuid.uuid4().hex,
        "contextId": task["contextId"],
        "taskId": task["id"],
        "parts": [*parts, *data],
    }
    task["status"] = {"state": state, "message": reply, "timestamp": now()}
    task["history"].append(reply)


def end_turn(
    turn: Turn,
    task: dict[str, Any],
    state: str,
    parts: list | None,
    error: str | None,
    code: str | None = None,
) -> None:
    """Write the turn's closing span and end its task: `completed` with the driver's text
    `parts`, else failed or canceled with `error` (as failure `code`)."""
    if state == "completed":
        reply = [{"kind": "text", "text": p["text"]} for p in parts or []]
        completion: dict[str, Any] = {
            "content": [{"type": "text", "text": p["text"]} for p in reply]
        }
        failure = None
    else:
        reason = error or "the turn was canceled by its sender"
        completion = {"error": reason}
        reply = [{"kind": "text", "text": f"the turn failed: {reason}" if error else reason}]
        failure = (
            code or ("proxy.driver_error" if state == "failed" else "proxy.canceled"),
            reason,
        )
    turn.spans.append(
        span(
            "turn",
            "chain",
            trace_id=turn.trace_id,
            parent=None,
            started=turn.started,
            ok=state == "completed",
            own_id=turn.span_id,
            attributes={
                "gen_ai.prompt": as_json(
                    {"prompt": turn.text, "system_prompt": turn.system_prompt}
                ),
                "gen_ai.completion": as_json(completion),
            },
        )
    )
    finish_task(task, state, reply, turn.usage, failure)
    turn.settled.set()
