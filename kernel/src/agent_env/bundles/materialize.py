"""Write a bundle's entities into the stores; a new version only when the content digest changed.

Files go to the object store by content (`blobs/sha256/<hex>`), so an unchanged file is never
written twice; each entity's document lists its files' digests, which is how a changed
version can say which files changed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agent_env.aio import to_thread
from agent_env.bundles.model import Bundle, Materialized, MaterializedArtifact
from agent_env.stores.versioned import Entities, PutResult, changed_files, describe

BLOB_PREFIX = "blobs/sha256/"


def blob_key(digest: str) -> str:
    return f"{BLOB_PREFIX}{digest}"


def _file_digest(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _digest_files(files: dict[str, Path]) -> dict[str, tuple[str, int]]:
    return {rel: _file_digest(path) for rel, path in files.items()}


def content_digest(content: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of an entity's content."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _entries(bundle: Bundle) -> list[tuple[str, str, str, dict[str, Any], dict[str, Path]]]:
    """(kind, name, id, content without files, files) for every entity, in report order."""
    out: list[tuple[str, str, str, dict[str, Any], dict[str, Path]]] = []
    for a in bundle.artifacts.values():
        out.append(
            (
                "artifact",
                a.name,
                a.id,
                {"name": a.name, "kind": a.kind, "config": a.config},
                a.files,
            )
        )
    for kind, specs in (("skill", bundle.skills), ("env", bundle.envs), ("agent", bundle.agents)):
        for s in specs.values():
            out.append(
                (kind, s.name, s.id, {"name": s.name, "type": s.type, "config": s.config}, s.files)
            )
    for t in bundle.tasks.values():
        out.append(("task", t.name, t.id, {"name": t.name, "steps": t.raw}, {}))
    for e in bundle.evals.values():
        out.append(
            ("eval", e.name, e.id, {"name": e.name, "tasks": e.tasks, "config": e.config}, {})
        )
    return out


async def _store_blobs(
    objects: Any, files: dict[str, Path], digests: dict[str, tuple[str, int]]
) -> None:
    for rel, path in files.items():
        key = blob_key(digests[rel][0])
        if not await objects.exists(key):
            await objects.put_file(key, path)


async def fetch_files(objects: Any, files: dict[str, str], folder: Path) -> None:
    """Write a stored entity's files (relative path -> content digest) under `folder`: the read
    side of `materialize`, so plugins never depend on how blobs are laid out in the store."""
    for rel, digest in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        await objects.get_file(blob_key(digest), path)


async def _preview(
    entities: Entities, kind: str, entity_id: str, digest: str, files: dict[str, str] | None
) -> PutResult:
    latest = await entities.latest(kind, entity_id)
    if latest is None:
        return PutResult(version=1, status="new")
    if latest.digest == digest:
        return PutResult(version=latest.version, status="unchanged")
    return PutResult(
        version=latest.version + 1,
        status="changed",
        changed_files=changed_files(latest.files, files),
    )


async def put_entity(
    stores: Any,
    kind: str,
    entity_id: str,
    content: dict[str, Any],
    host_files: dict[str, Path],
    *,
    dry_run: bool = False,
    entities: Entities | None = None,
) -> tuple[PutResult, str]:
    """Put one entity (its `content` plus `host_files`, relative path -> host path, stored by
    digest) as a new version when its digest changed: (`PutResult`, digest). `dry_run`
    reports the same and writes nothing."""
    entities = entities or getattr(stores, "entities", None) or Entities(stores.documents)
    digests = await to_thread(_digest_files, host_files)
    if host_files:
        content = {
            **content,
            "files": {rel: {"sha256": d, "size": s} for rel, (d, s) in digests.items()},
        }
    digest = content_digest(content)
    files = {rel: d for rel, (d, _) in digests.items()} if host_files else None
    if dry_run:
        return await _preview(entities, kind, entity_id, digest, files), digest
    await _store_blobs(stores.objects, host_files, digests)
    return await entities.put(kind, entity_id, content, digest=digest, files=files), digest


async def materialize(bundle: Bundle, stores: Any, *, dry_run: bool = False) -> Materialized:
    """Put every entity of `bundle` (artifacts, skills, envs, agents, tasks, evals) as a version;
    `dry_run` computes the same report and writes nothing."""
    entities = getattr(stores, "entities", None) or Entities(stores.documents)
    lines: list[str] = []
    versions: dict[tuple[str, str], int] = {}
    artifacts: dict[str, MaterializedArtifact] = {}
    task_versions: dict[str, int] = {}
    for kind, name, entity_id, content, host_files in _entries(bundle):
        result, digest = await put_entity(
            stores, kind, entity_id, content, host_files, dry_run=dry_run, entities=entities
        )
        lines.append(f"{kind} {name}: {describe(result)}")
        versions[(kind, name)] = result.version
        if kind == "task":
            task_versions[name] = result.version
        elif kind == "artifact":
            spec = bundle.artifacts[name]
            artifacts[name] = MaterializedArtifact(
                name=name,
                kind=spec.kind,
                id=entity_id,
                version=result.version,
                digest=digest,
                path=spec.content_path,
            )
    return Materialized(
        lines=lines,
        artifacts=artifacts,
        task_versions=task_versions,
        versions=versions,
        dry_run=dry_run,
    )
