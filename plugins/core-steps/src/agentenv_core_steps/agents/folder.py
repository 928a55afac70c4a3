"""An agent folder as stored (`agents/<name>/` of the bundle): entity, type, config and files
on this host, fetched by content digest like env folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from agent_env.context import StepContext
from agent_env.suggest import did_you_mean


@attrs.frozen(kw_only=True)
class StoredAgent:
    name: str
    entity_id: str
    version: int
    type: str
    config: dict[str, Any]
    folder: Path


def agent_ref_name(ref: str) -> str:
    return ref.rstrip("/").rsplit("/", 1)[-1]


async def load_agent(ctx: StepContext, ref: str, version: int | None = None) -> StoredAgent | None:
    """The bundle agent `ref` (name or full id), or None when the task's bundle has none."""
    from agentenv_core_steps.envs.folder import _fetch_files

    entities = ctx.stores.entities
    entity_id = ref if ref.startswith("@") else f"{ctx.task_id.rsplit('/', 1)[0]}/{ref}"
    entity = await entities.get("agent", entity_id, version)
    if entity is None:
        return None
    digest = entity.digest.split(":", 1)[-1]
    folder = await _fetch_files(ctx, entity.files or {}, digest)
    return StoredAgent(
        name=str(entity.content.get("name") or agent_ref_name(entity_id)),
        entity_id=entity.entity_id,
        version=entity.version,
        type=str(entity.content.get("type") or "a2a_agent"),
        config=dict(entity.content.get("config") or {}),
        folder=folder,
    )


async def known_agents(ctx: StepContext) -> list[str]:
    prefix = ctx.task_id.rsplit("/", 1)[0] + "/"
    return sorted(
        agent_ref_name(i) for i in await ctx.stores.entities.ids("agent") if i.startswith(prefix)
    )


def unknown_agent_message(ref: str, bundle_agents: list[str], kinds: list[str]) -> str:
    names = sorted(set(bundle_agents) | set(kinds))
    return (
        f"no agent {ref!r}{did_you_mean(ref, names)}: not an agent folder of the bundle "
        f"({', '.join(bundle_agents) or 'none'}) nor a registered agent type ({', '.join(kinds)})"
    )
