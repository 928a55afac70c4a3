"""`[stores] object = "gcs"`: objects in one Cloud Storage bucket, optionally under a prefix.

A Cloud Storage upload replaces the object atomically, so readers never see a torn object.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import StoreError
from agent_env.fsutil import replacing
from agent_env.stores.base import ObjectStore
from agent_env.stores.names import check_object_key, check_object_prefix
from agent_env.stores.support import existing_file, object_bytes, object_root
from agentenv_gcp_stores import settings as _settings
from agentenv_gcp_stores._client import GcpClient, credentials


class GcsObjectStore(ObjectStore):
    """Settings: `bucket` (required), `prefix`, `create_bucket` (default false), `location`
    (for a created bucket), plus `project`, `endpoint_url` and the credential settings."""

    type = "gcs"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("gcs", self.settings)
        self.bucket_name = str(_settings.need("gcs", self.options, "bucket"))
        self.root = object_root(self.options["prefix"])
        self._client = GcpClient("gcs", self.options, self._build)
        self._bucket: Any = None

    def _build(self) -> Any:
        import google.cloud.storage as storage

        options = (
            {"api_endpoint": self.options["endpoint_url"]} if self.options["endpoint_url"] else None
        )
        return storage.Client(
            project=self.options["project"] or None,
            credentials=credentials("gcs", self.options),
            client_options=options,
        )

    def _bucket_ref(self, client: Any) -> Any:
        if self._bucket is None or self._bucket.client is not client:
            import google.api_core.exceptions as gexc

            bucket = client.bucket(self.bucket_name)
            try:
                bucket.reload(timeout=self._timeout)
            except gexc.Forbidden:
                pass  # object-only permissions (e.g. roles/storage.objectAdmin)
            except gexc.NotFound:
                if not self.options["create_bucket"]:
                    raise StoreError(
                        f"gcs store: bucket {self.bucket_name!r} does not exist; create it, or "
                        "set create_bucket = true in [stores.gcs]"
                    ) from None
                try:
                    bucket = client.create_bucket(
                        self.bucket_name,
                        location=self.options["location"] or None,
                        timeout=self._timeout,
                    )
                except gexc.Conflict:
                    bucket = client.bucket(self.bucket_name)
            self._bucket = bucket
        return self._bucket

    @property
    def _timeout(self) -> float:
        return float(self.options["timeout"] or 60)

    def _blob(self, client: Any, key: str) -> Any:
        return self._bucket_ref(client).blob(self.root + key)

    async def put(self, key: str, data: bytes) -> None:
        check_object_key(key)
        body = object_bytes(key, data)
        await self._client.call(
            lambda c: self._blob(c, key).upload_from_string(
                body, content_type="application/octet-stream", timeout=self._timeout
            ),
            f"put {key!r}",
        )

    async def get(self, key: str) -> bytes:
        check_object_key(key)

        def read(client: Any) -> bytes | None:
            import google.api_core.exceptions as gexc

            try:
                return self._blob(client, key).download_as_bytes(timeout=self._timeout)
            except gexc.NotFound:
                return None

        data = await self._client.call(read, f"get {key!r}")
        if data is None:
            raise KeyError(key)
        return data

    async def exists(self, key: str) -> bool:
        check_object_key(key)
        return await self._client.call(
            lambda c: self._blob(c, key).exists(timeout=self._timeout), f"check {key!r}"
        )

    async def delete(self, key: str) -> None:
        check_object_key(key)

        def remove(client: Any) -> None:
            import google.api_core.exceptions as gexc

            try:
                self._blob(client, key).delete(timeout=self._timeout)
            except gexc.NotFound:
                pass

        await self._client.call(remove, f"delete {key!r}")

    async def list(self, prefix: str = "") -> list[str]:
        full = self.root + check_object_prefix(prefix)

        def scan(client: Any) -> list[str]:
            bucket = self._bucket_ref(client)
            blobs = client.list_blobs(bucket, prefix=full, timeout=self._timeout)
            return [b.name[len(self.root) :] for b in blobs]

        return sorted(await self._client.call(scan, f"list {prefix!r}"))

    async def put_file(self, key: str, path: Path) -> None:
        check_object_key(key)
        source = existing_file(key, path)
        await self._client.call(
            lambda c: self._blob(c, key).upload_from_filename(
                str(source), content_type="application/octet-stream", timeout=self._timeout
            ),
            f"upload {source} to {key!r}",
        )

    async def get_file(self, key: str, path: Path) -> None:
        """Download next to `path`, then rename: `path` never holds a partial object."""
        check_object_key(key)
        dest = Path(path)

        def download(client: Any) -> bool:
            import google.api_core.exceptions as gexc

            try:
                with replacing(dest) as tmp, open(tmp, "wb") as out:
                    self._blob(client, key).download_to_file(out, timeout=self._timeout)
                return True
            except gexc.NotFound:
                return False

        if not await self._client.call(download, f"download {key!r}"):
            raise KeyError(key)

    async def close(self) -> None:
        self._client.close()
