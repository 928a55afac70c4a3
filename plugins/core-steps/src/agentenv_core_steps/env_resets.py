"""Resetting deployed envs through the run's gateway: `data/reset` (and re-seeding with
`data/add`), as the `reset_env` step and a warm pool's recycling do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the gateway module loads this one lazily (a warm pool's resets)
    from agentenv_core_steps.gateway import RunGateway

RESET_TIMEOUT = 60.0


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
