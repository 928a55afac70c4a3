"""`/api/v1/{tasks,envs,artifacts,agents,skills,evals}`: the stored entities (latest version
per id, paged), one entity at a version, and its versions with the runs that used each."""

from __future__ import annotations

from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent_env import results
from agentenv_explorer.params import BadRequest, only, paging, whole

#: URL segment -> entity kind.
KINDS = {f"{kind}s": kind for kind in results.ENTITY_KINDS}


def _kind(request: Request) -> str:
    segment = request.path_params["kind"]
    if segment not in KINDS:
        from agent_env.suggest import did_you_mean

        raise BadRequest(
            f"no entity kind {segment!r}{did_you_mean(segment, KINDS)}; kinds: {', '.join(KINDS)}",
            404,
        )
    return KINDS[segment]


def _entity(entity: Any) -> dict[str, Any]:
    return attrs.asdict(entity)


async def list_entities(request: Request) -> JSONResponse:
    only(request.query_params, ("limit", "offset", "id"))
    kind = _kind(request)
    limit, offset = paging(request.query_params)
    stores = request.app.state.explorer.stores
    grouped = await stores.documents.count_by(f"entities-{kind}", ["entity_id"])
    wanted = (request.query_params.get("id") or "").lower()
    ids = [(str(k[0]), n) for k, n in grouped if k[0] and wanted in str(k[0]).lower()]
    rows = []
    for entity_id, versions in ids[offset : offset + limit]:
        latest = await stores.entities.latest(kind, entity_id)
        if latest is None:
            continue
        rows.append(
            {
                "id": entity_id,
                "name": (latest.content or {}).get("name"),
                "version": latest.version,
                "versions": versions,
                "digest": latest.digest,
                "created_at": latest.created_at,
            }
        )
    return JSONResponse(
        {
            "items": rows,
            "total": len(ids),
            "limit": limit,
            "offset": offset,
            "has_more": offset + len(rows) < len(ids),
        }
    )


def _split(path: str) -> tuple[str, bool]:
    """(entity id, whether `/versions` was asked)."""
    if path.endswith("/versions"):
        return path[: -len("/versions")], True
    return path, False


async def show_entity(request: Request) -> JSONResponse:
    kind = _kind(request)
    entity_id, versions = _split(request.path_params["entity_id"])
    stores = request.app.state.explorer.stores
    if versions:
        only(request.query_params, ())
        history = await stores.entities.history(kind, entity_id)
        if not history:
            raise BadRequest(f"no {kind} {entity_id!r}", 404)
        rows = []
        for entity in reversed(history):
            used = await results.runs_using(stores, kind, entity_id, entity.version)
            rows.append(
                {
                    "version": entity.version,
                    "digest": entity.digest,
                    "created_at": entity.created_at,
                    "files": sorted(entity.files or {}),
                    "runs": used,
                }
            )
        return JSONResponse(rows)
    only(request.query_params, ("version",))
    version = whole(request.query_params, "version", 0, 1, 10**9) or None
    entity = await stores.entities.get(kind, entity_id, version)
    if entity is None:
        at = f" version {version}" if version else ""
        raise BadRequest(f"no {kind} {entity_id!r}{at}", 404)
    return JSONResponse(_entity(entity))


ROUTES = [
    Route("/api/v1/{kind}", list_entities, methods=["GET"]),
    Route("/api/v1/{kind}/{entity_id:path}", show_entity, methods=["GET"]),
]
