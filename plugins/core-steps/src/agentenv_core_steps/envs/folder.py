"""An env as stored: its entity (id, version, type, config) and its files on this host.

Steps read envs from the stores, not from the bundle folder, so `env_version` works, a resumed
run deploys exactly what it materialized, and a worker on another host sees the same files.
Files are fetched by content digest into `<cache>/envs/<digest>/` once and reused.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Self

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.suggest import did_you_mean


@attrs.frozen(kw_only=True)
class StoredFolder:
    """An env or agent entity as stored, its files fetched by digest onto this host."""

    name: str
    entity_id: str
    version: int
    type: str
    config: dict[str, Any]
    folder: Path
    digest: str

    @classmethod
    async def fetch(cls, ctx: StepContext, entity: Any, default_type: str) -> Self:
        """`entity` with its files on this host; `default_type` when its content names none."""
        digest = entity.digest.split(":", 1)[-1]
        return cls(
            name=str(entity.content.get("name") or env_name(entity.entity_id)),
            entity_id=entity.entity_id,
            version=entity.version,
            type=str(entity.content.get("type") or default_type),
            config=dict(entity.content.get("config") or {}),
            folder=await _fetch_files(ctx, entity.files or {}, digest),
            digest=digest,
        )


@attrs.frozen(kw_only=True)
class StoredEnv(StoredFolder):
    """An env of the stores."""


def env_name(ref: str) -> str:
    """The bundle name of an env or agent reference (a bundle name or a full `@...` id)."""
    return ref.rstrip("/").rsplit("/", 1)[-1]


async def load_env(ctx: StepContext, ref: str, version: int | None = None) -> StoredEnv:
    """The env `ref` (bundle name or full id) of this task's bundle, files on the host."""
    entities = ctx.stores.entities
    if ref.startswith("@"):
        candidates = [ref]
    else:
        prefix = ctx.task_id.rsplit("/", 1)[0]
        candidates = [f"{prefix}/{ref}"]
    entity = None
    for entity_id in candidates:
        entity = await entities.get("env", entity_id, version)
        if entity is not None:
            break
    if entity is None and not ref.startswith("@"):
        named = []
        for entity_id in await entities.ids("env"):
            latest = await entities.latest("env", entity_id)
            if latest is not None and latest.content.get("name") == ref:
                named.append(entity_id)
        prefix = ctx.task_id.rsplit("/", 1)[0]
        ours = [i for i in named if i.startswith(prefix.split("/", 1)[0])] or named
        if len(ours) == 1:
            entity = await entities.get("env", ours[0], version)
    if entity is None:
        known = [env_name(i) for i in await entities.ids("env")]
        what = f"version {version} of env {ref!r}" if version is not None else f"env {ref!r}"
        raise StepFailed(
            ctx.step_id,
            f"no {what} in the stores{did_you_mean(env_name(ref), known)}; "
            "envs are materialized from the bundle's envs/ folder",
        )
    return await StoredEnv.fetch(ctx, entity, "mcp_server")


async def _fetch_files(ctx: StepContext, files: dict[str, str], digest: str) -> Path:
    from agent_env.bundles import fetch_files
    from agent_env.paths import cache_dir

    target = cache_dir() / "envs" / digest[:32]
    if target.is_dir():
        return target
    staging = target.parent / f".{target.name}.{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    try:
        await fetch_files(ctx.stores.objects, files, staging)
        try:
            os.replace(staging, target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
