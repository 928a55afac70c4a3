"""`reset_env`: call a deployed env's data-plane `data/reset` through the run's gateway.
Best effort by default (`fail_task_on_error` false), as the existing bundles expect."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step
from agentenv_core_steps.envs.folder import env_name
from agentenv_core_steps.gateway import RunGateway, gateway_for

RESET_TIMEOUT = 60.0


def deployed_env(ctx: StepContext, env_id: str) -> tuple[str, dict]:
    """(name, `envs.<name>` record) of a deployed env; StepFailed naming the deployed ones."""
    name = env_name(env_id)
    envs = ctx.get("envs", default={}) or {}
    entry = envs.get(name)
    if not isinstance(entry, dict):
        from agent_env.suggest import did_you_mean

        raise StepFailed(
            ctx.step_id,
            f"env {name!r} is not deployed in this task"
            f"{did_you_mean(name, envs)}; deployed: "
            f"{', '.join(sorted(envs)) or 'none'} (add a deploy_env step)",
        )
    return name, entry


@attrs.frozen(kw_only=True)
class ResetEnv(Step):
    type: ClassVar[str] = "reset_env"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    fail_task_on_error: bool = False
    env_id: str

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_protocol.errors import ProtocolError

        name, _ = deployed_env(ctx, self.env_id)
        gateway = await gateway_for(ctx)
        try:
            await reset_envs(gateway, [name])
        except (ProtocolError, OSError) as e:
            from agentenv_core_steps.faults import gateway_failure_class

            raise StepFailed(
                self.id,
                f"env {name!r}: data/reset failed: {e or type(e).__name__}",
                failure_class=gateway_failure_class(e) or "env",
            ) from None
        ctx.log(f"env {name!r} reset")


async def reset_envs(
    gateway: RunGateway, names: list[str], seeds: Mapping[str, list | None] | None = None
) -> None:
    """`data/reset` each env in `names` through `gateway` (as its admin), concurrently, then
    `data/add` its parts in `seeds` (re-seeding it); a `ProtocolError` naming the first env
    that did not reset."""
    import anyio

    from agentenv_protocol.client import EnvClient
    from agentenv_protocol.errors import ProtocolError

    failed: list[BaseException] = []

    async def reset(name: str) -> None:
        try:
            async with EnvClient(
                f"{gateway.url}/svc/{name}", token=gateway.admin_token, timeout=RESET_TIMEOUT
            ) as client:
                await client.reset()
                parts = (seeds or {}).get(name)
                if parts:
                    await client.add(parts)
        except (ProtocolError, OSError) as e:
            failed.append(e)

    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(reset, name)
    if failed:
        raise failed[0]  # as it came (its type says whose fault it was)


async def initial_states(
    gateway: RunGateway, names: list[str]
) -> tuple[dict[str, list | None], list[str]]:
    """Each env's data plane (`data/get`) as it is now, right after its deploy, which a warm
    pool re-seeds it with after each `data/reset` (None for an env without a get handler);
    the env is reset and re-seeded once here, so a pool learns at once whether that works.
    Also the envs that serve no `data/reset` at all (nothing a pool could reset)."""
    import anyio

    from agentenv_protocol.client import EnvClient
    from agentenv_protocol.errors import MethodNotFound, ProtocolError

    out: dict[str, list | None] = {}
    no_reset: list[str] = []
    failed: list[str] = []

    async def get(name: str) -> None:
        try:
            async with EnvClient(
                f"{gateway.url}/svc/{name}", token=gateway.admin_token, timeout=RESET_TIMEOUT
            ) as client:
                try:
                    out[name] = await client.get()
                except MethodNotFound:
                    out[name] = None
                try:
                    await client.reset()
                except MethodNotFound:
                    no_reset.append(name)
                    return
                parts = out[name]
                if parts:
                    await client.add(parts)
        except (ProtocolError, OSError) as e:
            failed.append(f"env {name!r}: its first data/reset and re-seed failed: {e}")

    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(get, name)
    if failed:
        raise ProtocolError(failed[0])
    return out, sorted(no_reset)
