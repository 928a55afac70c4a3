"""Snapshot and fork for trainers (GRPO groups, tree search) over OpenEnv.

- Fork the current state: during a turn, the control action
  `CallToolAction(tool_name="agentenv_snapshot", arguments={"snapshot_id": NAME})` (the id is
  optional) snapshots the episode's task instance (every env's state, the gateway's call log,
  the env clock; stored as `snapshot_task` stores one) and answers `{snapshot, digest}`. It is
  never listed among the turn's tools, so the model does not see it; the episode goes on.
- Reset from a snapshot: `reset(snapshot="ID[@N]")` starts an episode of the snapshot's task
  that restores it right before the turn it was taken in (same prompt, the snapshot's state);
  N sessions resetting from one snapshot are N independent children. The first observation's
  metadata carries `forked_from` and the restored state's `digest`.
"""

from __future__ import annotations

from typing import Any

from agent_env.context import StepContext
from agent_env.engine.snapshot import RESTORE_FROM, TaskSnapshot
from agent_env.errors import StepFailed

#: The control action's name (reserved: an env tool may not take it).
SNAPSHOT_ACTION = "agentenv_snapshot"


async def from_snapshot(runtime: Any, ref: str) -> tuple[Any, dict[Any, Any]]:
    """The served task a snapshot was taken of and the resources its episode starts with;
    ValueError (the observation's reason) for an unknown or damaged snapshot, or one of a task
    this server does not serve."""
    from agent_env.engine.snapshot import load
    from agent_env.errors import AgentEnvError

    try:
        snapshot = await load(runtime.host.session.stores, ref)
    except AgentEnvError as e:
        raise ValueError(str(e)) from None
    try:
        served = runtime.served.find(snapshot.task)
    except ValueError:
        raise ValueError(
            f"snapshot {snapshot.ref} was taken of task {snapshot.task!r}, which this server "
            "does not serve"
        ) from None
    return served, {RESTORE_FROM: snapshot}


async def take(ctx: StepContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """Snapshot the instance whose turn `ctx` (its prompt step) is playing; what to answer."""
    from agent_env.engine.snapshot import save
    from agentenv_core_steps.snapshots import capture

    name = arguments.get("snapshot_id") or f"{ctx.task_id}:{ctx.task_instance_id}:{ctx.step_id}"
    if not isinstance(name, str) or not name.strip():
        raise ValueError("snapshot_id must be a non-empty name")
    taken = await save(ctx.stores, await capture(ctx, name))
    return {
        "snapshot": taken.ref,
        "digest": taken.digest,
        "envs": sorted(taken.envs),
        "call_position": taken.call_position,
    }


async def restore_before_turn(ctx: StepContext) -> dict[str, Any] | None:
    """In a child episode, at the step its snapshot was taken in: restore it (once) and check
    the digest; what the first observation tells of it. None anywhere else."""
    from agentenv_core_steps.snapshots import restore

    snapshot: TaskSnapshot | None = ctx.instance_resource_if_started(RESTORE_FROM)
    if snapshot is None or snapshot.at_step != ctx.step_id:
        return None
    if ctx.get("outputs", "restored_snapshot") is not None:
        return None
    restored = await restore(ctx, snapshot)
    if restored != snapshot.digest:
        raise StepFailed(
            ctx.step_id,
            f"restored snapshot {snapshot.ref}, but the state reads back as {restored}, not "
            f"{snapshot.digest}",
            failure_class="env",
        )
    told = {"forked_from": snapshot.ref, "digest": restored}
    ctx.set("outputs", "restored_snapshot", value=told)
    return told
