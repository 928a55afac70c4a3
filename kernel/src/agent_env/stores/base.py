"""The four store interfaces. Backends are registered through `agentenv_register_stores`,
keyed by `kind` and `type`, and selected in the config's `[stores]` table.

Every method is async; a backend wraps blocking SDK calls in `agent_env.aio.to_thread`.
A backend's constructor takes its settings table and the agent-env home folder and must not
do I/O (connections open lazily), so building the registry stays cheap.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs


@attrs.frozen(kw_only=True)
class Page:
    """One page of a query: `items` are (key, doc) pairs, `total` counts every match."""

    items: list[tuple[str, dict[str, Any]]]
    total: int
    limit: int
    offset: int

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.items) < self.total


def field_value(doc: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted `path` (`task.name`) of a document; None when absent."""
    value: Any = doc
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _sort_key(value: Any) -> tuple[int, Any]:
    # None first, then numbers, then strings (the order SQLite gives NULL, numbers, text)
    if value is None:
        return (0, 0)
    if isinstance(value, bool | int | float):
        return (1, value)
    return (2, str(value))


class _Backend(abc.ABC):  # noqa: B024 (abstract only in its subclasses)
    kind: ClassVar[str] = ""
    type: ClassVar[str] = ""

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        self.settings = dict(settings or {})
        self.home = home

    async def close(self) -> None:
        """Release connections; the store may not be used afterwards."""


class DocumentStore(_Backend):
    """JSON documents in named collections. `create` is the atomic primitive that versioned
    entities build on: it must fail (return False) when the key exists, across processes."""

    kind: ClassVar[str] = "document"

    @abc.abstractmethod
    async def get(self, collection: str, key: str) -> dict[str, Any] | None: ...

    @abc.abstractmethod
    async def put(self, collection: str, key: str, doc: Mapping[str, Any]) -> None:
        """Create or replace."""

    @abc.abstractmethod
    async def create(self, collection: str, key: str, doc: Mapping[str, Any]) -> bool:
        """Create only if absent; False when the key already exists."""

    @abc.abstractmethod
    async def delete(self, collection: str, key: str) -> None:
        """Remove the document; no error when absent."""

    @abc.abstractmethod
    async def list(self, collection: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        """Every (key, doc) whose key starts with `prefix`, sorted by key."""

    def revision(self) -> object | None:
        """A token that changes when any document of the store changes (from any process), for
        callers that keep what they computed from documents; None when the backend cannot tell
        cheaply (callers then read again). Compare tokens with `==` only."""
        return None

    async def query(
        self,
        collection: str,
        *,
        where: Mapping[str, Any] | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        """One page of the documents whose dotted fields equal `where`'s values, ordered by the
        dotted field `order_by` (then by key; by key alone when None).

        This default reads the whole collection; a backend that can filter and sort where the
        data lives (SQLite: indexes) overrides it. Example:
        `await docs.query("task_instances", where={"run_id": rid}, order_by="id", limit=50)`.
        """
        from agent_env.stores.names import check_collection

        check_collection(collection)
        wanted = dict(where or {})
        rows = [
            (k, d)
            for k, d in await self.list(collection)
            if all(field_value(d, f) == v for f, v in wanted.items())
        ]
        if order_by is not None:
            rows.sort(key=lambda kd: (_sort_key(field_value(kd[1], order_by)), kd[0]))
        if descending:
            rows.reverse()
        start = max(int(offset), 0)
        return Page(
            items=rows[start : start + max(int(limit), 0)],
            total=len(rows),
            limit=int(limit),
            offset=start,
        )

    async def count_by(
        self,
        collection: str,
        fields: Sequence[str],
        *,
        where: Mapping[str, Any] | None = None,
    ) -> builtins.list[tuple[tuple[Any, ...], int]]:
        """How many documents matching `where` have each combination of the dotted `fields`'
        values: `[((value, ...), count), ...]` sorted by the values. A JSON object or list
        value is given as its compact JSON text. The default reads the whole collection."""
        import json

        from agent_env.stores.names import check_collection

        check_collection(collection)
        wanted = dict(where or {})
        counts: dict[tuple[Any, ...], int] = {}
        for _, doc in await self.list(collection):
            if all(field_value(doc, f) == v for f, v in wanted.items()):
                values = tuple(field_value(doc, f) for f in fields)
                values = tuple(
                    json.dumps(v, separators=(",", ":")) if isinstance(v, dict | list) else v
                    for v in values
                )
                counts[values] = counts.get(values, 0) + 1
        return sorted(counts.items(), key=lambda kv: tuple(_sort_key(v) for v in kv[0]))


class ObjectStore(_Backend):
    """Immutable-by-convention blobs under slash-separated keys; writes are atomic."""

    kind: ClassVar[str] = "object"

    @abc.abstractmethod
    async def put(self, key: str, data: bytes) -> None: ...

    @abc.abstractmethod
    async def get(self, key: str) -> bytes:
        """The object's bytes; `KeyError` when absent."""

    @abc.abstractmethod
    async def exists(self, key: str) -> bool: ...

    @abc.abstractmethod
    async def delete(self, key: str) -> None: ...

    @abc.abstractmethod
    async def list(self, prefix: str = "") -> list[str]:
        """Every key that starts with `prefix`, sorted."""

    async def put_file(self, key: str, path: Path) -> None:
        await self.put(key, Path(path).read_bytes())

    async def get_file(self, key: str, path: Path) -> None:
        data = await self.get(key)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)


class SecretStore(_Backend):
    """Named secret strings. Values never reach another store, a log or a trajectory."""

    kind: ClassVar[str] = "secret"

    @abc.abstractmethod
    async def get(self, name: str) -> str | None: ...

    @abc.abstractmethod
    async def set(self, name: str, value: str) -> None: ...

    @abc.abstractmethod
    async def delete(self, name: str) -> None: ...

    @abc.abstractmethod
    async def list(self) -> list[str]: ...

    def revision(self) -> object | None:
        """A token that changes whenever a secret is added, changed or removed (from any
        process), for callers that keep what they derived from the values (a redactor); None
        when the backend cannot tell cheaply (callers then read every value again)."""
        return None


class ImageStore(_Backend):
    """Container images by reference: a local daemon, an OCI registry, ECR, Artifact Registry."""

    kind: ClassVar[str] = "image"

    @abc.abstractmethod
    async def push(self, local_ref: str, name: str) -> str:
        """Store the local image `local_ref` as `name`; returns the stored reference (which
        `exists`, `pull` and `list` then know). `StoreError` when `local_ref` is not local."""

    @abc.abstractmethod
    async def pull(self, ref: str) -> str:
        """Make `ref` available to the local daemon; returns the local reference.

        `KeyError` when the store has no `ref`; `StoreError` for any other failure."""

    @abc.abstractmethod
    async def exists(self, ref: str) -> bool: ...

    @abc.abstractmethod
    async def list(self, prefix: str = "") -> list[str]: ...
