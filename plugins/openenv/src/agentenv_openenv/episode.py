"""An episode: one task instance run by the engine, whose played agent is the OpenEnv client.

The engine runs the task as `agent-env run` would, with the `openenv` agent kind deployed for
every `deploy_agent`. Each `prompt_agent` to it opens a `Turn` (the prompt, and an MCP client
to the run's gateway with the agent's role-bound token, so the gateway's auth and call log
apply) and parks until the client's `end_turn`. The instance's end (verifiers scored, sandboxes
torn down) ends the episode.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.agents import AgentConfig, AgentKind, AgentSpec, PromptRequest
from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.resources import InstanceKey

#: The agent kind name (also what the run record shows as the agent).
KIND = "openenv"
#: The instance resource that is the episode playing the instance's agent (given to the run
#: by `Episode.run`, dropped with the instance: no table outlives an episode).
EPISODE: InstanceKey[Episode] = InstanceKey("openenv.episode")


@attrs.define
class Turn:
    """One prompt the client answers with `end_turn`."""

    prompt: str
    system_prompt: str | None
    prompt_id: str
    client: Any = None  # agentenv_protocol.client.EnvClient on the gateway, None without envs
    tools: list[dict[str, Any]] | None = None
    response: str | None = None
    ended: anyio.Event = attrs.field(factory=anyio.Event)
    closed: bool = False
    trajectory: list[dict[str, Any]] = attrs.field(factory=list)
    #: The prompt step's context while the turn is open (a snapshot of the instance reads it).
    ctx: Any = None
    #: In a child of a snapshot, what its restore told (`forked_from`, `digest`).
    restored: dict[str, Any] | None = None


class Episode:
    """One task instance and the turn the client is playing."""

    def __init__(self, host: Any, served: Any, resources: dict[Any, Any] | None = None):
        self.host = host
        self.served = served
        #: Instance resources beyond the episode itself (a snapshot to restore).
        self.resources = dict(resources or {})
        #: Set once the episode's run is planned (before its instance starts).
        self.instance_id: str | None = None
        self.run_id: str | None = None
        self.turn: Turn | None = None
        self.record: dict[str, Any] | None = None
        self.error: str | None = None
        self.finished = anyio.Event()
        self._changed = anyio.Event()
        self._task: asyncio.Task[Any] | None = None
        self.abandoned = False

    async def run(self) -> None:
        """Run the episode as a run of one trial to its end (cancelled by `abandon`); always
        marks the episode done."""
        # `abandon` cancels this task as the engine's own cancellations come (asyncio's
        # `Task.cancel`: an anyio scope's would go on cancelling while its teardown runs)
        self._task = asyncio.current_task()
        try:
            if self.abandoned:  # abandoned before it started
                return
            prepared = await self.host.prepare(
                self.served.key, self.served.task, {**self.resources, EPISODE: self}
            )
            self.run_id = prepared.run_id
            self.instance_id = prepared.trials[0].id
            self.record = await self.host.execute(prepared)
        except asyncio.CancelledError:
            if not self.abandoned:
                raise
            if self._task is not None:
                self._task.uncancel()  # the cancellation `abandon` asked for ends here
        except Exception as e:  # the engine fails instances itself; this is a host fault
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self._task = None
            if self.turn is not None:  # a finished episode keeps its turn, not its instance
                self.turn.ctx = self.turn.client = None
            self.finished.set()
            self._changed.set()

    def open_turn(self, turn: Turn) -> None:
        self.turn = turn
        self._changed.set()

    async def wait_turn_or_end(self) -> Turn | None:
        """The next open turn, or None once the instance finished."""
        while True:
            turn = self.turn
            if turn is not None and not turn.closed and turn.response is None:
                return turn
            if self.finished.is_set():
                return None
            self._changed = anyio.Event()
            await self._changed.wait()

    async def abandon(self) -> None:
        """Cancel the instance (its teardown still runs) and wait until it is torn down."""
        self.abandoned = True
        if self._task is not None:  # None once the episode finished
            self._task.cancel()
        turn = self.turn
        if turn is not None:
            turn.ended.set()
        with anyio.CancelScope(shield=True):
            await self.finished.wait()


def episode_of(ctx: StepContext) -> Episode:
    episode = ctx.instance_resource_if_started(EPISODE)
    if episode is None:
        raise StepFailed(
            ctx.step_id,
            f"the {KIND!r} agent is played by an OpenEnv client, and no OpenEnv session owns "
            f"task instance {ctx.task_instance_id!r}; serve the bundle with "
            "`agent-env openenv serve` instead",
            failure_class="agent",
        )
    return episode


class OpenEnvAgent(AgentKind):
    """The played agent of an OpenEnv episode: each prompt waits for the client's turn."""

    type: ClassVar[str] = KIND
    config_model = AgentConfig

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        episode_of(ctx)
        return {}

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        from agentenv_openenv.fork import restore_before_turn
        from agentenv_protocol.agent.types import AgentResult, Usage

        episode = episode_of(ctx)
        turn = Turn(
            prompt=request.text,
            system_prompt=request.system_prompt or record.get("system_prompt"),
            prompt_id=request.prompt_id,
            ctx=ctx,
            restored=await restore_before_turn(ctx),
        )
        turn.trajectory.append({"type": "user", "content": request.text})
        try:
            if request.mcp_url:
                async with gateway_client(ctx, request) as client:
                    turn.client = client
                    episode.open_turn(turn)
                    await turn.ended.wait()
            else:
                episode.open_turn(turn)
                await turn.ended.wait()
        finally:
            turn.closed = True
        if turn.response is None:
            return AgentResult(
                text="", failure=("cancelled", "the OpenEnv session ended the episode")
            )
        turn.trajectory.append({"type": "model", "content": turn.response})
        calls = sum(1 for e in turn.trajectory if e.get("type") == "tool")
        return AgentResult(
            text=turn.response,
            trajectory=tuple(turn.trajectory),
            usage=Usage(tool_call_count=calls),
        )


def gateway_client(ctx: StepContext, request: PromptRequest) -> Any:
    """The turn's MCP client to the run's gateway: in-process when the gateway is served on
    this loop (a warm pool's instance: no HTTP per step), else over HTTP."""
    from agentenv_core_steps.gateway import GATEWAY

    gateway = ctx.instance_resource_if_started(GATEWAY)
    if gateway is not None and request.token:
        client = gateway.in_process_client(request.token, request.mcp_url)
        if client is not None:
            return client
    from agentenv_protocol.client import EnvClient

    base, _, path = (request.mcp_url or "").partition("://")
    host, _, tail = path.partition("/")
    return EnvClient(
        f"{base}://{host}",
        token=request.token,
        mcp_path="/" + (tail or "mcp"),
        timeout=request.timeout_seconds,
        lean_mcp=True,  # each step crosses the gateway: no httpx on that path
    )


def tool_event(
    name: str, arguments: dict[str, Any], text: str, is_error: bool, started: float
) -> dict[str, Any]:
    return {
        "type": "tool",
        "name": name,
        "arguments": arguments,
        "result": text,
        "is_error": is_error,
        "seconds": round(time.perf_counter() - started, 4),
    }
