"""`[stores] document = "firestore"`: collection `c` lives at `<collection_prefix>/c/docs`.

Firestore document ids cannot hold every key we accept (slashes, `..`, long unicode), so a
document's id is the SHA-256 of its key and the key itself is a field, which prefix listings
query in key order. `create` is Firestore's own `create()`: the server refuses it when the
document exists, so one writer wins across any number of processes. A document is stored as
its JSON text (zlib compressed when large), exactly as written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.base import DocumentStore
from agent_env.stores.names import (
    COLLECTION_RE,
    check_collection,
    check_document_key,
    check_document_key_bytes,
    check_document_prefix,
)
from agent_env.stores.support import pack_document, unpack_document
from agentenv_gcp_stores import settings as _settings
from agentenv_gcp_stores._client import GcpClient, credentials

COMPRESS_OVER = 64 * 1024
MAX_DOC_BYTES = 1_000_000
MAX_KEY_BYTES = 1500


class FirestoreDocumentStore(DocumentStore):
    """Settings: `project`, `database` (default "(default)"), `collection_prefix` (default
    "agentenv"), `endpoint_url` (an `http://host:port` address means the Firestore emulator,
    like FIRESTORE_EMULATOR_HOST), plus the credential settings."""

    type = "firestore"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("firestore", self.settings)
        self.root = str(self.options["collection_prefix"] or "")
        if not COLLECTION_RE.fullmatch(self.root):
            raise ConfigError(
                f"[stores.firestore] collection_prefix = {self.root!r}: use a letter followed "
                "by letters, digits, '_' or '-'"
            )
        self._client = GcpClient("firestore", self.options, self._build)

    def _build(self) -> Any:
        from google.cloud import firestore

        endpoint = str(self.options["endpoint_url"] or "")
        emulator = endpoint.startswith("http://")
        creds = credentials("firestore", self.options)
        if emulator and creds is None:
            from google.auth.credentials import AnonymousCredentials

            creds = AnonymousCredentials()
        client = firestore.Client(
            project=self.options["project"] or None,
            credentials=creds,
            database=self.options["database"] or None,
            client_options={"api_endpoint": endpoint} if endpoint and not emulator else None,
        )
        if emulator:
            client._emulator_host = endpoint[len("http://") :].rstrip("/")
        return client

    @property
    def _timeout(self) -> float:
        return float(self.options["timeout"] or 60)

    def _docs(self, client: Any, collection: str) -> Any:
        return client.collection(self.root, check_collection(collection), "docs")

    @staticmethod
    def _check(collection: str, key: str) -> None:
        check_collection(collection)
        check_document_key(key)
        check_document_key_bytes(
            key,
            MAX_KEY_BYTES,
            "Firestore indexes only that much of a field, so prefix listings would break",
        )

    def _ref(self, client: Any, collection: str, key: str) -> Any:
        return self._docs(client, collection).document(hashlib.sha256(key.encode()).hexdigest())

    def _data(self, collection: str, key: str, doc: Mapping[str, Any]) -> dict[str, Any]:
        self._check(collection, key)
        packed = pack_document(
            doc,
            f"{collection}/{key}",
            compress_over=COMPRESS_OVER,
            limit=MAX_DOC_BYTES,
            limit_name="Firestore's document limit",
        )
        return {"key": key, ("z" if isinstance(packed, bytes) else "doc"): packed}

    @staticmethod
    def _doc(data: Mapping[str, Any], where: str) -> dict[str, Any]:
        for field in ("z", "doc"):
            if field in data:
                return unpack_document(data[field], where)
        raise StoreError(f"{where}: stored document has neither 'doc' nor 'z'")

    async def get(self, collection: str, key: str) -> dict[str, Any] | None:
        self._check(collection, key)

        def read(client: Any) -> dict[str, Any] | None:
            snap = self._ref(client, collection, key).get(timeout=self._timeout)
            return self._doc(snap.to_dict(), f"{collection}/{key}") if snap.exists else None

        return await self._client.call(read, f"get {collection}/{key}")

    async def put(self, collection: str, key: str, doc: Mapping[str, Any]) -> None:
        data = self._data(collection, key, doc)
        await self._client.call(
            lambda c: self._ref(c, collection, key).set(data, timeout=self._timeout),
            f"put {collection}/{key}",
        )

    async def create(self, collection: str, key: str, doc: Mapping[str, Any]) -> bool:
        data = self._data(collection, key, doc)

        def create(client: Any) -> bool:
            import google.api_core.exceptions as gexc

            try:
                self._ref(client, collection, key).create(data, timeout=self._timeout)
                return True
            except gexc.Conflict:
                return False

        return await self._client.call(create, f"create {collection}/{key}")

    async def delete(self, collection: str, key: str) -> None:
        self._check(collection, key)
        await self._client.call(
            lambda c: self._ref(c, collection, key).delete(timeout=self._timeout),
            f"delete {collection}/{key}",
        )

    async def list(self, collection: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        check_collection(collection)
        check_document_prefix(prefix)

        def query(client: Any) -> list[tuple[str, dict[str, Any]]]:
            from google.cloud.firestore_v1.base_query import FieldFilter

            q = self._docs(client, collection)
            if prefix:
                q = q.where(filter=FieldFilter("key", ">=", prefix))
            rows = []
            for snap in q.order_by("key").stream(timeout=self._timeout):
                data = snap.to_dict()
                key = data.get("key", "")
                if not key.startswith(prefix):
                    break
                rows.append((key, self._doc(data, f"{collection}/{key}")))
            return rows

        rows = await self._client.call(query, f"list {collection}/{prefix}*")
        return sorted(rows, key=lambda row: row[0])

    async def close(self) -> None:
        self._client.close()
