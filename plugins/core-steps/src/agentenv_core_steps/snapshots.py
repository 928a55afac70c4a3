"""Take and restore a live task instance's snapshot through its gateway: each deployed env's
state (`agentenv_protocol.snapshots`: the env's own handlers or its data plane), the gateway's
call log and its env clock. The stored form is the kernel's (`agent_env.engine.snapshot`)."""

from __future__ import annotations

from typing import Any

import anyio

from agent_env.context import StepContext
from agent_env.engine.snapshot import TaskSnapshot, state_digest
from agent_env.errors import StepFailed
from agentenv_core_steps.gateway import RunGateway, gateway_for

TIMEOUT = 60.0


def _deployed(ctx: StepContext) -> list[str]:
    envs = ctx.get("envs", default={}) or {}
    return sorted(n for n, e in envs.items() if isinstance(e, dict) and e.get("url"))


def _clock(gateway: RunGateway) -> dict[str, Any]:
    """The clock as a snapshot keeps it: re-armed at the time it shows now, at its rate."""
    state = gateway.gateway.clock.state()
    if not state.get("armed"):
        return {"armed": False}
    return {
        "armed": True,
        "t0": state["virtual_time"],
        "rate": state["virtual_seconds_per_real_second"],
    }


async def _each_env(ctx: StepContext, gateway: RunGateway, names: list[str], fn: Any) -> dict:
    """`fn(name, client)` for every env in `names`, concurrently; name -> its answer."""
    from agentenv_protocol.client import EnvClient
    from agentenv_protocol.errors import ProtocolError

    found: dict[str, Any] = {}
    failed: dict[str, str] = {}

    async def one(name: str) -> None:
        try:
            async with EnvClient(
                f"{gateway.url}/svc/{name}", token=gateway.admin_token, timeout=TIMEOUT
            ) as client:
                found[name] = await fn(name, client)
        except (ProtocolError, ValueError, OSError) as e:
            failed[name] = str(e) or type(e).__name__

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(one, name)
    if failed:
        raise StepFailed(
            ctx.step_id,
            "; ".join(f"env {name!r}: {failed[name]}" for name in sorted(failed)),
            failure_class="env",
        )
    return found


async def _states(ctx: StepContext, gateway: RunGateway, names: list[str]) -> dict[str, Any]:
    from agentenv_protocol.snapshots import take_env_state

    return await _each_env(
        ctx,
        gateway,
        names,
        lambda n, c: take_env_state(c, card=gateway.gateway.cards.get(n), timeout=TIMEOUT),
    )


async def capture(ctx: StepContext, snapshot_id: str) -> TaskSnapshot:
    """The instance's state now, as a snapshot named `snapshot_id` (not stored yet)."""
    gateway = await gateway_for(ctx)
    names = _deployed(ctx)
    if not names:
        raise StepFailed(ctx.step_id, "no env is deployed yet: nothing to snapshot")
    calls = tuple(ctx.redact(gateway.calls()))
    clock = _clock(gateway)
    envs = await _states(ctx, gateway, names)
    _no_secrets(ctx, envs)
    task = ctx.task_id
    return TaskSnapshot(
        id=snapshot_id,
        task=task,
        at_step=ctx.step_id,
        taken_from=ctx.task_instance_id,
        envs=envs,
        clock=clock,
        calls=calls,
        digest=state_digest(task, envs, clock, calls),
    )


def _no_secrets(ctx: StepContext, envs: dict[str, Any]) -> None:
    """Refuse a state holding a secret the run knows: stores never get one, and masking it
    would store a state the env never had (the call log is redacted as every trajectory is)."""
    from agentenv_protocol.snapshots import canonical

    leaking = [n for n, s in sorted(envs.items()) if _masks(ctx, canonical(s["state"]))]
    if leaking:
        raise StepFailed(
            ctx.step_id,
            f"the state of env(s) {', '.join(map(repr, leaking))} holds a secret of this run; "
            "a snapshot never stores one",
            failure_class="env",
        )


def _masks(ctx: StepContext, data: bytes) -> bool:
    text = data.decode("utf-8")
    return bool(ctx.redact(text) != text)


async def restore(ctx: StepContext, snapshot: TaskSnapshot) -> str:
    """Put `snapshot` back into this instance (its envs must be the snapshot's); the state
    digest read back from the envs afterwards."""
    from agentenv_protocol.snapshots import restore_env_state, take_env_state

    gateway = await gateway_for(ctx)
    names = _deployed(ctx)
    if sorted(snapshot.envs) != names:
        raise StepFailed(
            ctx.step_id,
            f"snapshot {snapshot.ref} holds envs {', '.join(sorted(snapshot.envs)) or 'none'}; "
            f"this instance deployed {', '.join(names) or 'none'}",
        )

    async def put_back(name: str, client: Any) -> dict:
        """Restore the env, then read its state back on the same connection."""
        await restore_env_state(client, snapshot.envs[name], timeout=TIMEOUT)
        card = gateway.gateway.cards.get(name)
        return await take_env_state(client, card=card, timeout=TIMEOUT)

    envs = await _each_env(ctx, gateway, names, put_back)
    clock = gateway.gateway.clock
    if snapshot.clock.get("armed"):
        clock.set_time(snapshot.clock["t0"], snapshot.clock["rate"])
    elif clock.armed:
        clock.clear()
    gateway.gateway.trajectory.restore(snapshot.calls)
    calls = gateway.calls()[: snapshot.call_position]
    armed = clock.state()
    restored_clock = (
        {"armed": True, "t0": armed["t0"], "rate": armed["virtual_seconds_per_real_second"]}
        if armed.get("armed")
        else {"armed": False}
    )
    return state_digest(ctx.task_id, envs, restored_clock, calls)
