"""Resolve a stored entity of any kind (`entities-<kind>` collections) by its id or bundle name,
at a version: what running and exporting a stored task need. Listing and showing entities are
agentenv-stored-entities' (`agentenv_stored_entities.catalog`)."""

from __future__ import annotations

from typing import Any

from agent_env.errors import StoreError
from agent_env.suggest import did_you_mean


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
