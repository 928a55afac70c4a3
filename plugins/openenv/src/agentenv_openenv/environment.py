"""`TaskEnvironment`: the OpenEnv `Environment` of one WebSocket session (imports openenv).

`reset(split=, index=)` (or `task=`) starts an episode; `list_tools` / `call_tool` act through
the run's gateway; the added `end_turn(response)` tool ends the turn and answers the next
prompt, or `done=True` with the reward and the scores keyed by verifier id. Every error comes
back as an observation with a non-empty reason, never as an exception openenv's client would
raise: a task that fails to deploy, an env that fails, a tool that raises, an instance that does
not reach its next turn within the runtime's `reply_timeout` (abandoned in the background, so
the answer comes before the client's own message timeout), and any fault of ours. Reset, step
and close of one session take turns (a lock).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import Observation, State

from agentenv_openenv.episode import Episode, Turn, tool_event
from agentenv_openenv.fork import SNAPSHOT_ACTION

END_TURN = "end_turn"
END_TURN_TOOL = {
    "name": END_TURN,
    "description": "End your turn with your reply. The episode goes on to your next turn, "
    "or ends and is scored.",
    "input_schema": {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "Your reply."}},
    },
}
#: Names OpenEnv's own MCP clients use for the session; an env tool may not take them.
RESERVED = frozenset({"reset", "step", "state", "close", END_TURN, SNAPSHOT_ACTION})


def error_observation(message: str, task: dict[str, Any] | None = None) -> Observation:
    return Observation(
        done=True,
        reward=None,
        metadata={"status": "error", "error": message or "unknown error", "task": task},
    )


def reason(e: BaseException) -> str:
    """An exception as an observation's reason: its kind, and its message when it has one."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class NoReply(Exception):
    """The task instance neither opened its next turn nor ended within the reply timeout."""


class TaskEnvironment(Environment):
    """One session's episodes over the tasks `runtime` serves."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, runtime: Any):
        super().__init__()
        self.runtime = runtime
        self.episode: Episode | None = None
        self.step_count = 0
        self.calls = 0  # the episode's tool calls so far (per-step rewards' call_index)
        self.reported_end = False
        self._lock = anyio.Lock()

    # ---- the Task API (GET /<env>/splits, ...) -------------------------------------------

    def list_splits(self) -> list[str]:
        return self.runtime.served.split_names()

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return [t.entry() for t in self._split(split)]

    def num_tasks(self, split: str) -> int:
        return len(self._split(split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        tasks = self._split(split)
        if not 0 <= index < len(tasks):
            raise IndexError(index)
        return tasks[index].entry()

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list:
        return [t.entry() for t in self._split(split)[start:stop]]

    def _split(self, split: str) -> list[Any]:
        splits = self.runtime.served.splits
        if split not in splits:
            raise IndexError(split)
        return splits[split]

    # ---- episodes -------------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> Observation:
        raise NotImplementedError(
            "this environment is async: use reset_async (any OpenEnv client does)"
        )

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        raise NotImplementedError(
            "this environment is async: use step_async (any OpenEnv client does)"
        )

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        split: str | None = None,
        index: int | None = None,
        task: str | None = None,
        snapshot: str | None = None,
        **kwargs: Any,
    ) -> Observation:
        async with self._lock:
            try:
                return await self._reset(split, index, task, snapshot)
            except NoReply as e:
                return self._gave_up(str(e))
            except Exception as e:  # a fault of ours: still an observation, never a raise
                return self._gave_up(f"the reset failed: {reason(e)}")

    async def _reset(
        self, split: str | None, index: int | None, task: str | None, snapshot: str | None = None
    ) -> Observation:
        from agentenv_openenv.fork import from_snapshot

        await self._end_episode()
        served = self.runtime.served
        resources: dict[Any, Any] = {}
        try:
            if snapshot is not None:
                chosen, resources = await from_snapshot(self.runtime, snapshot)
            else:
                chosen = served.find(task) if task is not None else served.pick(split, index)
        except ValueError as e:
            return error_observation(str(e))
        self.step_count, self.calls, self.reported_end = 0, 0, False
        try:
            self.episode = await self.runtime.start(chosen, resources)
        except Exception as e:
            return error_observation(reason(e), chosen.ref())
        turn = await self._next_turn(self.episode, "reach its first prompt")
        if turn is None:
            return self._final(None)
        return Observation(
            done=False,
            reward=None,
            metadata={
                "prompt": turn.prompt,
                "system_prompt": turn.system_prompt,
                "task": chosen.ref(),
                "instance_id": self.episode.instance_id,
                "run_id": self.episode.run_id,
                **(turn.restored or {}),
            },
        )

    async def step_async(
        self, action: Any, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        async with self._lock:
            try:
                return await self._step(action, timeout_s)
            except NoReply as e:
                return self._gave_up(str(e))
            except Exception as e:  # a fault of ours: still an observation, never a raise
                return self._gave_up(f"the step failed: {reason(e)}")

    async def _step(self, action: Any, timeout_s: float | None) -> Observation:
        episode = self.episode
        if episode is None:
            return error_observation("no episode: call reset first")
        task = episode.served.ref()
        if self.reported_end:
            return error_observation("the episode has ended; call reset", task)
        turn = await self._next_turn(episode, "open its next turn")
        if turn is None:
            return self._final(getattr(action, "tool_name", None))
        if isinstance(action, ListToolsAction):
            tools = await self._tools(turn)
            if isinstance(tools, str):
                await self._end_episode()
                return error_observation(tools, task)
            return ListToolsObservation(tools=[Tool(**t) for t in tools])
        if isinstance(action, CallToolAction):
            self.step_count += 1
            if action.tool_name == END_TURN:
                return await self._end_turn(episode, turn, action.arguments)
            if action.tool_name == SNAPSHOT_ACTION:
                return await self._snapshot(turn, action.arguments)
            return await self._call(turn, action, timeout_s)
        return error_observation(f"unsupported action {type(action).__name__}", task)

    @property
    def state(self) -> State:
        episode = self.episode
        served = episode.served if episode else None
        turn = episode.turn if episode else None
        return State(
            episode_id=episode.instance_id if episode else None,
            step_count=self.step_count,
            task_id=served.task.id if served else None,
            task_name=served.task.name if served else None,
            split=served.split if served else None,
            index=served.index if served else None,
            turn=turn.prompt_id if turn is not None and not turn.closed else None,
            done=bool(episode and episode.finished.is_set()),
        )

    def close(self) -> None:
        """Abandon the open episode (its sandboxes are torn down); called by OpenEnv when the
        session ends, from a worker thread or from the server's loop."""
        episode, self.episode = self.episode, None
        if episode is None or episode.finished.is_set():
            return
        self.runtime.abandon_from_any_thread(episode)

    # ---- parts of a step ------------------------------------------------------------------

    async def _next_turn(self, episode: Episode, what: str) -> Turn | None:
        """The episode's open turn, or None once it ended; `NoReply` when neither comes within
        the runtime's reply timeout."""
        limit = self.runtime.reply_timeout
        with anyio.move_on_after(limit):
            return await episode.wait_turn_or_end()
        raise NoReply(
            f"the task instance did not {what} within {limit:g}s (the server's reply "
            "timeout); it was abandoned"
        )

    def _gave_up(self, message: str) -> Observation:
        """The error observation that ends the session's episode, torn down in the background
        so that the answer does not wait for its teardown."""
        episode = self.episode
        self.reported_end = True
        task = episode.served.ref() if episode is not None else None
        if episode is not None and not episode.finished.is_set():
            self.runtime.abandon_from_any_thread(episode)
        return error_observation(message, task)

    async def _end_episode(self) -> None:
        episode, self.episode = self.episode, None
        if episode is not None and not episode.finished.is_set():
            await episode.abandon()

    async def _tools(self, turn: Turn) -> list[dict[str, Any]] | str:
        """The turn's tools plus end_turn, or why the episode cannot go on."""
        from agentenv_protocol.errors import ProtocolError

        if turn.tools is None:
            listed: list[dict[str, Any]] = []
            if turn.client is not None:
                try:
                    with anyio.fail_after(self.runtime.reply_timeout):
                        found = await turn.client.list_tools()
                except (TimeoutError, ProtocolError, OSError) as e:
                    return f"the run's gateway did not list the turn's tools: {reason(e)}"
                for t in found:
                    listed.append(
                        {
                            "name": t.name,
                            "description": t.description or "",
                            "input_schema": t.inputSchema or {"type": "object", "properties": {}},
                        }
                    )
            clash = sorted(t["name"] for t in listed if t["name"] in RESERVED)
            if clash:
                return f"the env offers tools OpenEnv reserves: {', '.join(clash)}"
            turn.tools = [*listed, END_TURN_TOOL]
        return turn.tools

    async def _call(self, turn: Turn, action: Any, timeout_s: float | None) -> CallToolObservation:
        from agentenv_protocol.errors import ProtocolError

        name, arguments = action.tool_name, dict(action.arguments or {})
        tools = await self._tools(turn)
        if isinstance(tools, str):
            return CallToolObservation(
                tool_name=name,
                error=ToolError(error_type=ToolErrorType.TRANSPORT_ERROR, message=tools),
            )
        names = [t["name"] for t in tools]
        if name not in names or turn.client is None:
            return CallToolObservation(
                tool_name=name,
                error=ToolError(
                    error_type=ToolErrorType.TOOL_NOT_FOUND,
                    message=f"turn {turn.prompt_id!r} offers no tool {name!r}; it offers {names}",
                ),
            )
        started = time.perf_counter()
        limit = timeout_s if timeout_s is not None else self.runtime.reply_timeout
        try:
            with anyio.fail_after(limit):
                result = await turn.client.call_tool(name, arguments)
        except TimeoutError:
            return CallToolObservation(
                tool_name=name,
                error=ToolError(
                    error_type=ToolErrorType.TIMEOUT, message=f"{name} took over {limit:g}s"
                ),
            )
        except (ProtocolError, OSError) as e:
            return CallToolObservation(
                tool_name=name,
                error=ToolError(error_type=ToolErrorType.TRANSPORT_ERROR, message=reason(e)),
            )
        text = result.text
        turn.trajectory.append(tool_event(name, arguments, text, result.is_error, started))
        error = text if result.is_error else None
        rewards = self._step_rewards({"tool": name, "arguments": arguments, "error": error})
        return CallToolObservation(
            tool_name=name,
            reward=sum(r["score"] for r in rewards) / len(rewards) if rewards else None,
            metadata={"step_rewards": rewards} if rewards else {},
            result={
                "content": result.content,
                "structured_content": result.structured,
                "meta": None,
                "data": text,
                "is_error": result.is_error,
            },
            error=ToolError(error_type=ToolErrorType.EXECUTION_ERROR, message=text)
            if result.is_error
            else None,
        )

    def _step_rewards(self, call: dict[str, Any]) -> list[dict[str, Any]]:
        """The per-step rewards of this call when the task defines them: each of its steps
        that scores single calls (`score_call`, e.g. agentenv-grading's call_reward_verifier)
        gives `{call_index, score, verifier}` entries, as the trial record's `step_rewards`."""
        index, self.calls = self.calls, self.calls + 1
        if self.episode is None:
            return []
        task = self.episode.served.task
        scorers = [s for s in task.steps if callable(getattr(s, "score_call", None))]
        plugins = self.runtime.plugins
        return [r for s in scorers for r in s.score_call(call, index, plugins, task.id)]

    async def _snapshot(self, turn: Turn, arguments: dict[str, Any]) -> CallToolObservation:
        """Snapshot the episode's instance mid-turn (`agentenv_openenv.fork`); it goes on."""
        from agentenv_openenv.fork import take

        try:
            taken = await take(turn.ctx, dict(arguments or {}))
        except Exception as e:  # noqa: BLE001 - an observation with the reason, never a raise
            return CallToolObservation(
                tool_name=SNAPSHOT_ACTION,
                error=ToolError(error_type=ToolErrorType.EXECUTION_ERROR, message=reason(e)),
            )
        return CallToolObservation(tool_name=SNAPSHOT_ACTION, result=taken)

    async def _end_turn(
        self, episode: Episode, turn: Turn, arguments: dict[str, Any]
    ) -> Observation:
        response = arguments.get("response", "")
        turn.response = response if isinstance(response, str) else str(response)
        turn.ended.set()
        nxt = await self._next_turn(episode, "open its next turn or end")
        if nxt is not None:
            return CallToolObservation(
                tool_name=END_TURN,
                done=False,
                result={"prompt": nxt.prompt, "system_prompt": nxt.system_prompt},
            )
        return self._final(END_TURN)

    def _final(self, tool_name: str | None) -> Observation:
        """The observation that ends the episode: reward and scores, or why it failed."""
        from agentenv_openenv.served import verifier_scores

        episode = self.episode
        assert episode is not None
        self.reported_end = True
        served, record = episode.served, episode.record
        task = served.ref()
        if record is None:
            return error_observation(episode.error or "the episode ended without a record", task)
        metadata: dict[str, Any] = {
            "scores": verifier_scores(record),
            "task": task,
            "instance_id": episode.instance_id,
            "run_id": episode.run_id,
            "status": record.get("status"),
            "outcome": record.get("outcome"),
            # a warm pool's instance it ran on ({instance, episode, steps}), else None
            "reused": record.get("reused"),
        }
        reward = None
        if record.get("status") in ("failed", "cancelled"):
            metadata.update(status="error", error=record.get("outcome"))
        else:
            try:
                reward = self.runtime.served.reward_of(served, record)
            except Exception as e:
                metadata.update(status="error", error=f"no reward: {type(e).__name__}: {e}")
        if tool_name is None:
            return Observation(done=True, reward=reward, metadata=metadata)
        return CallToolObservation(
            tool_name=tool_name,
            done=True,
            reward=reward,
            metadata=metadata,
            result={"outcome": record.get("outcome")},
        )


def in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
