"""Lineage: which entity versions each run used, and which runs used an entity version.

A run writes one document per entity version it used (collection `lineage-uses`, keyed by the
version's content digest, then the kind and the run) and one summary (collection
`lineage-runs`, keyed by run id). Lineage follows content, not names: a task exported with
`bundle init` and run from its folder has a new id but the same digest, so `runs_using` on the
stored version finds both the run by id and the run of the exported folder.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

USES = "lineage-uses"
RUNS = "lineage-runs"
_SEP = "|"


def _use_key(digest: str, kind: str, run_id: str, entity_id: str, version: int) -> str:
    return _SEP.join((digest, kind, run_id, f"{version:08d}", entity_id))


async def record_run(stores: Any, run_id: str, uses: Iterable[dict[str, Any]]) -> list[dict]:
    """Record that run `run_id` used each `{kind, id, version, digest}` in `uses`; returns them."""
    rows = [
        {
            "kind": u["kind"],
            "id": u["id"],
            "version": int(u["version"]),
            "digest": u["digest"],
            "run_id": run_id,
        }
        for u in uses
    ]
    now = time.time()
    for row in rows:
        key = _use_key(row["digest"], row["kind"], run_id, row["id"], row["version"])
        await stores.documents.put(USES, key, {**row, "created_at": now})
    await stores.documents.put(RUNS, run_id, {"run_id": run_id, "uses": rows, "created_at": now})
    return rows


async def used_by(stores: Any, run_id: str) -> list[dict[str, Any]]:
    """The entity versions run `run_id` used (empty for a run recorded before lineage)."""
    doc = await stores.documents.get(RUNS, run_id)
    return list(doc.get("uses", [])) if doc else []


async def uses_of(
    stores: Any, kind: str, entity_id: str, version: int | None = None
) -> list[dict[str, Any]]:
    """Every recorded use of the content of `kind` `entity_id` (one version, or all of them),
    oldest first; each row names the run and the id and version that run saw."""
    entities = stores.entities
    if version is None:
        found = await entities.history(kind, entity_id)
    else:
        one = await entities.get(kind, entity_id, version)
        found = [one] if one is not None else []
    rows: list[dict[str, Any]] = []
    for digest in dict.fromkeys(e.digest for e in found):
        prefix = f"{digest}{_SEP}{kind}{_SEP}"
        rows.extend(doc for _, doc in await stores.documents.list(USES, prefix))
    return sorted(rows, key=lambda r: (r.get("created_at", 0.0), r["run_id"]))


async def runs_using(
    stores: Any, kind: str, entity_id: str, version: int | None = None
) -> list[str]:
    """Ids of the runs that used `kind` `entity_id` (version `version`, or any), oldest first."""
    return list(dict.fromkeys(r["run_id"] for r in await uses_of(stores, kind, entity_id, version)))


async def record_bundle_run(
    stores: Any, run_id: str, bundle: Any, materialized: Any, tasks: Iterable[Any], evals: Any = ()
) -> list[dict]:
    """Record what a run of `bundle` used: the tasks it runs, the evals it reports and every
    artifact, skill, env and agent of the bundle, at the versions `materialized` wrote."""
    task_names = {t.name for t in tasks}
    eval_names = set(evals or ())
    uses = []
    for (kind, name), version in sorted(materialized.versions.items()):
        if (kind == "task" and name not in task_names) or (
            kind == "eval" and name not in eval_names
        ):
            continue
        entity_id = _bundle_entity(bundle, kind, name)
        if entity_id is None:
            continue
        digest = await stores.entities.digest(kind, entity_id, version)
        if digest is not None:
            uses.append({"kind": kind, "id": entity_id, "version": version, "digest": digest})
    return await record_run(stores, run_id, uses)


#: Entity kind -> the `Bundle` attribute that holds that kind by name.
BUNDLE_MAPS = {
    "artifact": "artifacts",
    "skill": "skills",
    "env": "envs",
    "agent": "agents",
    "task": "tasks",
    "eval": "evals",
}


def _bundle_entity(bundle: Any, kind: str, name: str) -> str | None:
    entity = getattr(bundle, BUNDLE_MAPS.get(kind, ""), {}).get(name)
    return getattr(entity, "id", None)
