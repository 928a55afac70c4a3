"""`[stores] object = "s3"`: objects in one S3 bucket, optionally under a key prefix.

S3 replaces an object atomically on every PUT, so readers never see a torn object; listing
pages through `ListObjectsV2` and strips the configured prefix.
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
from agentenv_aws_stores import settings as _settings
from agentenv_aws_stores._client import AwsClient, error_code

_MISSING = {"NoSuchKey", "404", "NotFound"}


class S3ObjectStore(ObjectStore):
    """Settings: `bucket` (required), `prefix` (key prefix inside the bucket, e.g. "team-a/"),
    `create_bucket` (create it on first use; default false), plus the AWS connection settings
    (`region`, `endpoint_url`, `profile`, `access_key_id`, `secret_access_key`, ...)."""

    type = "s3"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("s3", self.settings)
        self.bucket = str(_settings.need("s3", self.options, "bucket"))
        self.root = object_root(self.options["prefix"])
        self._client = AwsClient("s3", "s3", self.options)
        self._bucket_checked = False

    def _s3(self) -> Any:
        client = self._client.get()
        if not self._bucket_checked:
            self._ensure_bucket(client)
            self._bucket_checked = True
        return client

    def _ensure_bucket(self, client: Any) -> None:
        import botocore.exceptions

        try:
            client.head_bucket(Bucket=self.bucket)
            return
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) in ("403", "AccessDenied", "Forbidden"):
                return  # object-only permissions: the object calls will tell
            if error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
                raise
        if not self.options["create_bucket"]:
            raise StoreError(
                f"s3 store: bucket {self.bucket!r} does not exist; create it, or set "
                "create_bucket = true in [stores.s3]"
            )
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        region = client.meta.region_name
        if region and region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            client.create_bucket(**kwargs)
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise

    async def put(self, key: str, data: bytes) -> None:
        full = self.root + check_object_key(key)
        body = object_bytes(key, data)
        await self._client.call(
            lambda _: self._s3().put_object(Bucket=self.bucket, Key=full, Body=body),
            f"put {key!r}",
        )

    async def get(self, key: str) -> bytes:
        full = self.root + check_object_key(key)

        def read(_: Any) -> bytes | None:
            import botocore.exceptions

            try:
                return self._s3().get_object(Bucket=self.bucket, Key=full)["Body"].read()
            except botocore.exceptions.ClientError as exc:
                if error_code(exc) in _MISSING:
                    return None
                raise

        data = await self._client.call(read, f"get {key!r}")
        if data is None:
            raise KeyError(key)
        return data

    async def exists(self, key: str) -> bool:
        full = self.root + check_object_key(key)

        def head(_: Any) -> bool:
            import botocore.exceptions

            try:
                self._s3().head_object(Bucket=self.bucket, Key=full)
                return True
            except botocore.exceptions.ClientError as exc:
                if error_code(exc) in _MISSING:
                    return False
                raise

        return await self._client.call(head, f"check {key!r}")

    async def delete(self, key: str) -> None:
        full = self.root + check_object_key(key)
        await self._client.call(
            lambda _: self._s3().delete_object(Bucket=self.bucket, Key=full),
            f"delete {key!r}",
        )

    async def list(self, prefix: str = "") -> list[str]:
        full = self.root + check_object_prefix(prefix)

        def scan(_: Any) -> list[str]:
            pages = (
                self._s3()
                .get_paginator("list_objects_v2")
                .paginate(Bucket=self.bucket, Prefix=full)
            )
            cut = len(self.root)
            return [o["Key"][cut:] for page in pages for o in page.get("Contents", [])]

        return sorted(await self._client.call(scan, f"list {prefix!r}"))

    async def put_file(self, key: str, path: Path) -> None:
        full = self.root + check_object_key(key)
        source = existing_file(key, path)
        await self._client.call(
            lambda _: self._s3().upload_file(str(source), self.bucket, full),
            f"upload {source} to {key!r}",
        )

    async def get_file(self, key: str, path: Path) -> None:
        """Download next to `path`, then rename: `path` never holds a partial object."""
        full = self.root + check_object_key(key)
        dest = Path(path)

        def download(_: Any) -> bool:
            import botocore.exceptions

            try:
                with replacing(dest) as tmp:
                    self._s3().download_file(self.bucket, full, tmp)
                return True
            except botocore.exceptions.ClientError as exc:
                if error_code(exc) in _MISSING:
                    return False
                raise

        if not await self._client.call(download, f"download {key!r}"):
            raise KeyError(key)

    async def close(self) -> None:
        self._client.close()
