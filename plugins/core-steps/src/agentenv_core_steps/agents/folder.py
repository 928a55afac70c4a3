"""An agent folder as stored (`agents/<name>/` of the bundle): entity, type, config and files
on this host, fetched by content digest like env folders."""

from __future__ import annotations

import attrs

from agent_env.context import StepContext
from agent_env.suggest import did_you_mean
from agentenv_core_steps.envs.folder import StoredFolder, env_name


@attrs.frozen(kw_only=True)
class StoredAgent(StoredFolder):
    """An agent folder of the stores."""


async def load_agent(ctx: StepContext, ref: str, version: int | None = None) -> StoredAgent | None:
    """The bundle agent `ref` (name or full id), or None when the task's bundle has none."""
    entities = ctx.stores.entities
    entity_id = ref if ref.startswith("@") else f"{ctx.task_id.rsplit('/', 1)[0]}/{ref}"
    entity = await entities.get("agent", entity_id, version)
    if entity is None:
        return None
    return await StoredAgent.fetch(ctx, entity, "a2a_agent")


async def known_agents(ctx: StepContext) -> list[str]:
    prefix = ctx.task_id.rsplit("/", 1)[0] + "/"
    return sorted(
        env_name(i) for i in await ctx.stores.entities.ids("agent") if i.startswith(prefix)
    )


def unknown_agent_message(ref: str, bundle_agents: list[str], kinds: list[str]) -> str:
    names = sorted(set(bundle_agents) | set(kinds))
    return (
        f"no agent {ref!r}{did_you_mean(ref, names)}: not an agent folder of the bundle "
        f"({', '.join(bundle_agents) or 'none'}) nor a registered agent type ({', '.join(kinds)})"
    )
