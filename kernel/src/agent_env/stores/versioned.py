"""Versioned entities on top of any `DocumentStore`, using only its interface.

Version `n` of entity `e` of kind `k` is the document `e@<n:08d>` in collection `entities-k`.
Writing it with `create` is the one atomic step: a writer that loses the race re-reads and
tries the next number, so concurrent writers in many processes never lose or duplicate a
version, on SQLite as on DynamoDB or Firestore.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from typing import Any, Literal

import attrs

from agent_env.errors import StoreError
from agent_env.stores.base import DocumentStore

Status = Literal["new", "unchanged", "changed"]
_KIND_RE = re.compile(r"[a-z][a-z0-9_]{0,39}")
_VERSION_RE = re.compile(r"\d{8,}")
MAX_ATTEMPTS = 10_000
#: Digests of stored versions an `Entities` remembers (a version never changes once written).
DIGESTS_KEPT = 4096


@attrs.frozen(kw_only=True)
class PutResult:
    """What a put did: the version that now holds the content, and why."""

    version: int
    status: Status
    changed_files: list[str] = attrs.field(factory=list)

    def describe(self) -> str:
        """The line materialization prints, e.g. "v2 (files changed: b.txt)"."""
        return describe(self)


@attrs.frozen(kw_only=True)
class Entity:
    """One stored version of an entity."""

    kind: str
    entity_id: str
    version: int
    digest: str
    content: dict[str, Any]
    files: dict[str, str] | None = None
    created_at: float = 0.0


def describe(result: PutResult) -> str:
    """Render a `PutResult` the way `agent-env run` reports materialized entities."""
    if result.status == "new":
        return f"v{result.version} (new)"
    if result.status == "unchanged":
        return f"v{result.version}, unchanged"
    if result.changed_files:
        return f"v{result.version} (files changed: {', '.join(result.changed_files)})"
    return f"v{result.version} (changed)"


def changed_files(old: dict[str, str] | None, new: dict[str, str] | None) -> list[str]:
    """Names added, removed, or whose digest differs between two name -> digest maps."""
    if old is None or new is None:
        return []
    return sorted(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))


def _collection(kind: str) -> str:
    if not isinstance(kind, str) or not _KIND_RE.fullmatch(kind):
        raise StoreError(
            f"bad entity kind {kind!r}: use lowercase letters, digits and '_', "
            "starting with a letter"
        )
    return f"entities-{kind}"


def _check_id(entity_id: str) -> str:
    if not isinstance(entity_id, str) or not entity_id or "\x00" in entity_id:
        raise StoreError(f"bad entity id {entity_id!r}: must be a non-empty string")
    if len(entity_id) > 900:
        raise StoreError(f"bad entity id {entity_id[:40]!r}...: longer than 900 characters")
    return entity_id


def _key(entity_id: str, version: int) -> str:
    return f"{entity_id}@{version:08d}"


class Entities:
    """Versioned entities stored in `documents`; safe to share between tasks and processes."""

    def __init__(self, documents: DocumentStore):
        self.documents = documents
        self._digests: OrderedDict[tuple[str, str, int], str] = OrderedDict()

    def _entity(self, kind: str, entity_id: str, doc: dict[str, Any]) -> Entity:
        try:
            return Entity(
                kind=kind,
                entity_id=entity_id,
                version=int(doc["version"]),
                digest=str(doc["digest"]),
                content=dict(doc["content"]),
                files=doc.get("files"),
                created_at=float(doc.get("created_at", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(
                f"entity {kind} {entity_id!r}: stored version document is malformed ({exc!r})"
            ) from None

    async def _all(self, kind: str, entity_id: str) -> list[Entity]:
        prefix = f"{_check_id(entity_id)}@"
        rows = await self.documents.list(_collection(kind), prefix)
        found = [
            self._entity(kind, entity_id, doc)
            for key, doc in rows
            if _VERSION_RE.fullmatch(key[len(prefix) :])
        ]
        return sorted(found, key=lambda e: e.version)

    async def put(
        self,
        kind: str,
        entity_id: str,
        content: dict[str, Any],
        *,
        digest: str,
        files: dict[str, str] | None = None,
    ) -> PutResult:
        """Store `content` as the next version unless the latest version has the same digest."""
        collection = _collection(kind)
        _check_id(entity_id)
        if not isinstance(digest, str) or not digest:
            raise StoreError(f"entity {kind} {entity_id!r}: digest must be a non-empty string")
        if not isinstance(content, dict):
            raise StoreError(f"entity {kind} {entity_id!r}: content must be a dict")
        latest = await self.latest(kind, entity_id)
        for _ in range(MAX_ATTEMPTS):
            if latest is not None and latest.digest == digest:
                return PutResult(version=latest.version, status="unchanged")
            version = 1 if latest is None else latest.version + 1
            doc = {
                "entity_id": entity_id,
                "version": version,
                "digest": digest,
                "content": content,
                "files": files,
                "created_at": time.time(),
            }
            if await self.documents.create(collection, _key(entity_id, version), doc):
                if latest is None:
                    return PutResult(version=version, status="new")
                return PutResult(
                    version=version,
                    status="changed",
                    changed_files=changed_files(latest.files, files),
                )
            winner = await self.get(kind, entity_id, version)
            if winner is None:
                raise StoreError(
                    f"entity {kind} {entity_id!r}: version {version} exists but cannot be read"
                )
            latest = await self.latest(kind, entity_id) or winner
            if winner.digest == digest:
                return PutResult(version=winner.version, status="unchanged")
        raise StoreError(
            f"entity {kind} {entity_id!r}: gave up after {MAX_ATTEMPTS} conflicting writes"
        )

    async def get(self, kind: str, entity_id: str, version: int | None = None) -> Entity | None:
        """Version `version` (the latest when None), or None when it does not exist."""
        if version is None:
            return await self.latest(kind, entity_id)
        if not isinstance(version, int) or version < 1:
            raise StoreError(f"entity {kind} {entity_id!r}: bad version {version!r}")
        doc = await self.documents.get(_collection(kind), _key(_check_id(entity_id), version))
        return None if doc is None else self._entity(kind, entity_id, doc)

    async def digest(self, kind: str, entity_id: str, version: int) -> str | None:
        """The content digest of version `version`, or None when it does not exist. Versions
        are written once and never change, so the last `DIGESTS_KEPT` looked up are kept: a
        run per episode (an OpenEnv server) records its lineage without reading them again."""
        key = (kind, entity_id, version)
        known = self._digests.get(key)
        if known is not None:
            self._digests.move_to_end(key)
            return known
        found = await self.get(kind, entity_id, version)
        if found is None:
            return None
        self._digests[key] = found.digest
        if len(self._digests) > DIGESTS_KEPT:
            self._digests.popitem(last=False)
        return found.digest

    async def latest(self, kind: str, entity_id: str) -> Entity | None:
        """The highest version, or None for an entity never written."""
        found = await self._all(kind, entity_id)
        return found[-1] if found else None

    async def versions(self, kind: str, entity_id: str) -> list[int]:
        """Every stored version number, ascending."""
        return [e.version for e in await self._all(kind, entity_id)]

    async def history(self, kind: str, entity_id: str) -> list[Entity]:
        """Every stored version, oldest first."""
        return await self._all(kind, entity_id)

    async def ids(self, kind: str) -> list[str]:
        """Every entity id of `kind` that has at least one version, sorted."""
        rows = await self.documents.list(_collection(kind))
        ids = {k.rpartition("@")[0] for k, _ in rows if _VERSION_RE.fullmatch(k.rpartition("@")[2])}
        return sorted(ids)
