"""The state one served agent keeps, and how an A2A message becomes a call to its `run`.

`AgentRuntime` implements what `agentenv_protocol.agent.server.a2a_routes` asks of an agent
(`card`, `send`, `open_stream`, `cancel`, `tasks`), so the SDK agent is served by the same A2A
server as every other agent here: only the task semantics (typed parts, typed config, results,
streaming items) live in this package.
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from agentenv_protocol.a2a_agent import parts as wire_parts
from agentenv_protocol.a2a_agent.tasks import (
    AgentConfig,
    NativeTrajectory,
    TaskOutcome,
    TaskProgress,
    TaskRequest,
    TaskResult,
)
from agentenv_protocol.a2a_agent.triggers import TriggerEngine
from agentenv_protocol.agent.server import BoundedDict

if TYPE_CHECKING:
    from agentenv_protocol.a2a_agent.framework import AgentEnvAgent

LOG = logging.getLogger("agentenv_protocol.a2a_agent")
Emit = Callable[[dict[str, Any]], Awaitable[None]]
TERMINAL = frozenset({"completed", "failed", "canceled", "rejected", "input-required"})


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _unhandled(task_id: str) -> TaskResult:
    """The failure a caller sees when `run` raised or returned no TaskResult: a correlation id,
    never the exception's text (it may hold secrets); the log has the traceback."""
    correlation = uuid.uuid4().hex
    LOG.exception("task %s failed in run(); correlation id %s", task_id, correlation)
    return TaskResult.failure(
        "framework.unhandled_exception",
        f"An unexpected framework error occurred. Correlation ID: {correlation}",
        error_type="infra_error",
    )


class TaskNotCancelable(Exception):
    """tasks/cancel on a task that already ended."""


class AgentRuntime:
    """One served agent: its config, MCP servers, tasks, trajectories, sessions, triggers."""

    def __init__(self, agent: AgentEnvAgent) -> None:
        self.agent = agent
        definition = type(agent).__agentenv_definition__
        self.definition = definition
        self.config: AgentConfig = (definition.config or AgentConfig)()
        self.mcp_servers: dict[str, dict[str, Any]] = {}
        self.tasks: BoundedDict = BoundedDict()
        self.trajectories: BoundedDict = BoundedDict()
        self.sessions: BoundedDict = BoundedDict()
        self.triggers = TriggerEngine()
        self._running: dict[str, anyio.CancelScope] = {}
        self._locks: BoundedDict = BoundedDict()
        self.task_group: Any = None  # set while the app's lifespan runs
        self.card_entries: list[dict[str, Any]] = []  # the SDK services' entries

    # --- what the A2A server asks of an agent -----------------------------------------
    def card(self, base_url: str) -> dict[str, Any]:
        return self.definition.card(base_url, self.card_entries)

    async def send(self, params: dict[str, Any]) -> dict[str, Any]:
        """message/send: run the task (blocking unless configuration.blocking is false)."""
        message, task = self._accept(params)
        blocking = (params.get("configuration") or {}).get("blocking", True)
        if blocking is False:
            self._start_background(message, task)
            return dict(task)
        await self._execute(message, task, None)
        return self.tasks[task["id"]]

    async def open_stream(self, params: dict[str, Any]) -> Callable[[Emit], Awaitable[None]]:
        """message/stream: ValueError now for a bad message, else a coroutine function that
        runs the task and hands each event (the task, then status updates) to `emit`."""
        message, task = self._accept(params)

        async def run(emit: Emit) -> None:
            await emit(dict(task))
            await self._execute(message, task, emit)

        return run

    async def cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        task_id = params.get("id")
        task = self.tasks.get(task_id)
        if task is None:
            raise KeyError(task_id)
        scope = self._running.get(task_id)
        if scope is None or task["status"]["state"] in TERMINAL:
            raise TaskNotCancelable(task_id)
        scope.cancel()
        self._finish(task, TaskResult(outcome=TaskOutcome.CANCELED))
        return self.tasks[task_id]

    # --- running a task ---------------------------------------------------------------
    def _accept(self, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        message = params.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise ValueError("params.message with a parts list is required")
        if not message["parts"]:
            raise ValueError("params.message.parts is empty")
        parts = tuple(wire_parts.from_wire(p, i) for i, p in enumerate(message["parts"]))
        if message.get("metadata") is not None and not isinstance(message["metadata"], dict):
            raise ValueError("params.message.metadata must be an object")
        context_id = message.get("contextId") or uuid.uuid4().hex
        if not isinstance(context_id, str):
            raise ValueError("params.message.contextId must be a string")
        task_id = uuid.uuid4().hex
        message = dict(message, contextId=context_id, taskId=task_id, _parts=parts)
        task = {
            "kind": "task",
            "id": task_id,
            "contextId": context_id,
            "status": {"state": "submitted", "timestamp": _now()},
            "history": [{k: v for k, v in message.items() if k != "_parts"}],
        }
        self.tasks[task_id] = task
        return message, task

    def _start_background(self, message: dict[str, Any], task: dict[str, Any]) -> None:
        async def drain() -> None:
            await self._execute(message, task, None)

        if self.task_group is not None:
            self.task_group.start_soon(drain)
            return
        import asyncio  # served without a lifespan (an in-process ASGI transport)

        background = asyncio.get_running_loop().create_task(drain())
        self._background = getattr(self, "_background", set())
        self._background.add(background)
        background.add_done_callback(self._background.discard)

    async def _execute(
        self, message: dict[str, Any], task: dict[str, Any], emit: Emit | None
    ) -> None:
        """Run the agent on `message`, handing status updates to `emit` (the last is final)."""
        context_id, task_id = task["contextId"], task["id"]
        request = TaskRequest(
            parts=message["_parts"],
            config=self.config,
            context_id=context_id,
            task_id=task_id,
            message_id=message.get("messageId"),
            metadata=dict(message.get("metadata") or {}),
            session_ref=self.sessions.get(context_id),
            mcp_servers={n: dict(s) for n, s in self.mcp_servers.items()},
        )
        result: TaskResult | None = None
        with anyio.CancelScope() as scope:
            self._running[task_id] = scope
            try:
                async with self._locks.setdefault(context_id, anyio.Lock()):
                    task["status"] = {"state": "working", "timestamp": _now()}
                    result = await self._call_run(request, task, emit)
            except Exception:  # an agent bug fails its task, not the server
                result = _unhandled(task_id)
            finally:
                self._running.pop(task_id, None)
        if task["status"]["state"] != "canceled":
            self._finish(task, result or TaskResult(outcome=TaskOutcome.CANCELED))
        if emit is not None:
            await emit(self._status_event(task, final=True))

    async def _call_run(
        self, request: TaskRequest, task: dict[str, Any], emit: Emit | None
    ) -> TaskResult:
        outcome = self.agent.run(request)
        result: Any = None
        if inspect.isasyncgen(outcome):
            try:
                async for item in outcome:
                    if isinstance(item, TaskResult):
                        result = item
                        break
                    if not isinstance(item, TaskProgress):
                        raise TypeError(
                            "a streaming run yields TaskProgress items and ends with a "
                            f"TaskResult; got {type(item).__name__}"
                        )
                    event = self._progress(task, item)
                    if emit is not None:
                        await emit(event)
            finally:
                await outcome.aclose()
            if result is None:
                raise TypeError("a streaming run ended without yielding a TaskResult")
        else:
            result = await outcome
        if not isinstance(result, TaskResult):
            raise TypeError(f"run() must return a TaskResult; got {type(result).__name__}")
        return result

    @staticmethod
    def _supersede(task: dict[str, Any]) -> None:
        """A status about to be replaced leaves its message in the history (as A2A keeps it):
        the history is the user's message and the progress before the current status."""
        previous = task["status"].get("message")
        if previous is not None:
            task["history"].append(previous)

    def _progress(self, task: dict[str, Any], item: TaskProgress) -> dict[str, Any]:
        self._supersede(task)
        task["status"] = {
            "state": "working",
            "message": self._message(task, item.parts),
            "timestamp": _now(),
        }
        return self._status_event(task, final=False)

    def _finish(self, task: dict[str, Any], result: TaskResult) -> None:
        reply = self._message(task, ())
        reply["parts"] = result.wire_parts()
        metadata: dict[str, Any] = {}
        if result.usage is not None:
            metadata["usage"] = result.usage.to_dict()
        if result.session_ref is not None:
            metadata["session_ref"] = result.session_ref
            self.sessions[task["contextId"]] = result.session_ref
        if metadata:
            reply["metadata"] = metadata
        if isinstance(result.native_trajectory, NativeTrajectory):
            self.trajectories[task["id"]] = result.native_trajectory
        self._supersede(task)
        task["status"] = {"state": result.outcome.value, "message": reply, "timestamp": _now()}

    @staticmethod
    def _message(task: dict[str, Any], parts: tuple[Any, ...]) -> dict[str, Any]:
        return {
            "kind": "message",
            "role": "agent",
            "messageId": uuid.uuid4().hex,
            "contextId": task["contextId"],
            "taskId": task["id"],
            "parts": [wire_parts.to_wire(p) for p in parts],
        }

    @staticmethod
    def _status_event(task: dict[str, Any], *, final: bool) -> dict[str, Any]:
        return {
            "kind": "status-update",
            "taskId": task["id"],
            "contextId": task["contextId"],
            "status": task["status"],
            "final": final,
        }
