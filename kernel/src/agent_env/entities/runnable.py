"""A stored task or eval as a bundle a run can execute, without writing to the stores: the
entities are exported (user-scoped fields kept) into a folder named by their digests under
`<home>/stored-bundles/`, parsed with their stored ids, and reported at their stored versions."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import attrs

from agent_env.bundles.model import Materialized, MaterializedArtifact, ResolvedSource
from agent_env.entities.catalog import get_version
from agent_env.entities.export import export
from agent_env.stores.lineage import BUNDLE_MAPS

FOLDER = "stored-bundles"


def _bundle_name(prefix: str) -> str:
    return prefix.rpartition("/")[2] or prefix


async def stored_bundle(
    stores: Any, plugins: Any, home: Path, kind: str, ref: str, version: int | None = None
) -> tuple[Any, Materialized, Any]:
    """(bundle, materialized, root entity) for stored `kind` `ref` at `version`."""
    from agent_env.bundles import load_bundle

    root = await get_version(stores, kind, ref, version)
    key = hashlib.sha256(f"{root.kind}\0{root.entity_id}\0{root.version}".encode()).hexdigest()
    staging = Path(home) / FOLDER / f"{key[:16]}.new"
    shutil.rmtree(staging, ignore_errors=True)
    args = {"task": root.entity_id} if kind == "task" else {"evaluation": root.entity_id}
    done = await export(stores, staging, version=root.version, include_user_scope=True, **args)
    digest = hashlib.sha256(
        json.dumps(sorted((w["folder"], w["digest"]) for w in done.written)).encode()
    ).hexdigest()[:16]
    folder = Path(home) / FOLDER / f"{key[:16]}-{digest}"
    if folder.is_dir():
        shutil.rmtree(staging, ignore_errors=True)
    else:
        staging.rename(folder)
    prefix = root.entity_id.rpartition("/")[0]
    source = ResolvedSource(
        path=folder,
        provenance={"source": "store", kind: root.entity_id, "version": root.version},
        id_prefix=prefix,
        name=_bundle_name(prefix),
    )
    bundle = _stored_ids(load_bundle(source, plugins), done.written)
    return bundle, materialized_from(bundle, done.written), root


def _row_name(row: dict[str, Any]) -> str:
    """The bundle name of a written row (`tasks/hello.json` -> hello, `artifacts/x/` -> x)."""
    last = row["folder"].rstrip("/").rpartition("/")[2]
    return last.rpartition(".")[0] if row["kind"] in ("task", "eval") else last


def _stored_ids(bundle: Any, written: list[dict[str, Any]]) -> Any:
    """`bundle` whose entities carry the ids they are stored under (an eval's tasks and their
    artifacts may live under other prefixes than the eval)."""
    by_name = {(w["kind"], _row_name(w)): w["id"] for w in written}
    changes = {}
    for kind, attr in BUNDLE_MAPS.items():
        specs = getattr(bundle, attr)
        moved = {
            n: attrs.evolve(s, id=by_name[(kind, n)])
            for n, s in specs.items()
            if by_name.get((kind, n), s.id) != s.id
        }
        if moved:
            changes[attr] = {**specs, **moved}
    return attrs.evolve(bundle, **changes) if changes else bundle


def materialized_from(bundle: Any, written: list[dict[str, Any]]) -> Materialized:
    by_id = {(w["kind"], w["id"]): w for w in written}
    lines, versions, artifacts, task_versions = [], {}, {}, {}
    for kind, attr in BUNDLE_MAPS.items():
        for name, spec in getattr(bundle, attr).items():
            row = by_id.get((kind, spec.id))
            if row is None:
                continue
            lines.append(f"{kind} {name}: v{row['version']} (stored)")
            versions[(kind, name)] = row["version"]
            if kind == "task":
                task_versions[name] = row["version"]
            elif kind == "artifact":
                artifacts[name] = MaterializedArtifact(
                    name=name,
                    kind=spec.kind,
                    id=spec.id,
                    version=row["version"],
                    digest=row["digest"],
                    path=spec.content_path,
                )
    return Materialized(
        lines=lines, artifacts=artifacts, task_versions=task_versions, versions=versions
    )
