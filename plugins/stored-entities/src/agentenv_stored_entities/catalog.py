"""List and show stored entities of any kind (`entities-<kind>` collections), so a kind a plugin
writes shows up in the commands without kernel changes: the `list`, `show` and `get` of the
stored-entity commands."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class Page:
    """One page of a listing: its rows and how many matched in all."""

    rows: list[dict[str, Any]]
    total: int
    offset: int
    limit: int | None


def entity_type(content: dict[str, Any]) -> str | None:
    """The type a listing shows: an env/agent/skill `type`, an artifact `kind`."""
    value = content.get("type", content.get("kind"))
    return value if isinstance(value, str) else None


def summary(entity: Any, versions: int) -> dict[str, Any]:
    """One listing row: kind, id, name, type, the version shown and how many there are."""
    return {
        "kind": entity.kind,
        "id": entity.entity_id,
        "name": entity.content.get("name") or entity.entity_id.rpartition("/")[2],
        "type": entity_type(entity.content),
        "version": entity.version,
        "versions": versions,
        "digest": entity.digest,
        "created_at": entity.created_at,
    }


async def list_entities(
    stores: Any,
    kind: str,
    *,
    match: str | None = None,
    type_: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> Page:
    """The latest version of each entity of `kind`, sorted by id; `match` keeps ids that contain
    it, `type_` those of that type; `offset`/`limit` page through what matched."""
    rows = []
    for entity_id in await stores.entities.ids(kind):
        if match and match not in entity_id:
            continue
        history = await stores.entities.history(kind, entity_id)
        latest = history[-1]
        if type_ and entity_type(latest.content) != type_:
            continue
        rows.append(summary(latest, len(history)))
    end = None if limit is None else offset + limit
    return Page(rows=rows[offset:end], total=len(rows), offset=offset, limit=limit)


async def show(stores: Any, kind: str, ref: str, version: int | None = None) -> dict[str, Any]:
    """One version with its digest, content, files, every version and its lineage (the runs
    that used this content, with the id and version each run saw)."""
    from agent_env.cli.toolkit import get_version, uses_of

    entity = await get_version(stores, kind, ref, version)
    history = await stores.entities.history(kind, entity.entity_id)
    uses = await uses_of(stores, kind, entity.entity_id, entity.version)
    return {
        **summary(entity, len(history)),
        "content": entity.content,
        "files": entity.files or {},
        "history": [
            {"version": e.version, "digest": e.digest, "created_at": e.created_at} for e in history
        ],
        "runs": [{"run_id": u["run_id"], "id": u["id"], "version": u["version"]} for u in uses],
    }
