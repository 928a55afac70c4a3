"""List, resolve and show stored entities of any kind (`entities-<kind>` collections), so a
kind a plugin writes shows up in the commands without kernel changes."""

from __future__ import annotations

from typing import Any

import attrs

from agent_env.errors import StoreError
from agent_env.suggest import did_you_mean


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


async def resolve_id(stores: Any, kind: str, ref: str) -> str:
    """The stored id `ref` names: the full id, else the one id whose last part is `ref`
    (a bundle name); `StoreError` naming the kind with a did-you-mean otherwise."""
    ids = await stores.entities.ids(kind)
    if ref in ids:
        return ref
    by_name = [i for i in ids if i.rpartition("/")[2] == ref]
    if len(by_name) == 1:
        return by_name[0]
    if by_name:
        raise StoreError(
            f"{kind} {ref!r} is ambiguous; give the full id, one of: " + ", ".join(by_name)
        )
    names = sorted({*ids, *(i.rpartition("/")[2] for i in ids)})
    known = ", ".join(ids[:10]) + (" ..." if len(ids) > 10 else "") if ids else "none stored"
    raise StoreError(f"no {kind} {ref!r}{did_you_mean(ref, names)}; stored {kind}s: {known}")


async def get_version(stores: Any, kind: str, ref: str, version: int | None = None) -> Any:
    """The stored `Entity` for `ref` at `version` (the latest when None); errors name the
    entity and its versions."""
    entity_id = await resolve_id(stores, kind, ref)
    entity = await stores.entities.get(kind, entity_id, version)
    if entity is None:
        versions = await stores.entities.versions(kind, entity_id)
        raise StoreError(
            f"{kind} {entity_id!r} has no version {version}; versions: "
            + ", ".join(f"v{v}" for v in versions)
        )
    return entity


async def show(stores: Any, kind: str, ref: str, version: int | None = None) -> dict[str, Any]:
    """One version with its digest, content, files, every version and its lineage (the runs
    that used this content, with the id and version each run saw)."""
    from agent_env.stores.lineage import uses_of

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
