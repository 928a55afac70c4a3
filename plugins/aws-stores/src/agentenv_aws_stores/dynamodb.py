"""`[stores] document = "dynamodb"`: every collection in one DynamoDB table.

The table's partition key is the collection and its sort key the document key, so a prefix
listing is one `Query` with `begins_with`. A document is stored as its JSON text (zlib
compressed when large), which keeps floats, nesting and empty strings exactly as written.
`create` is a `PutItem` conditioned on `attribute_not_exists`: DynamoDB decides atomically
which of several writers in any number of processes wins.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import StoreError
from agent_env.stores.base import DocumentStore
from agent_env.stores.names import (
    check_collection,
    check_document_key,
    check_document_key_bytes,
    check_document_prefix,
)
from agent_env.stores.support import pack_document, unpack_document
from agentenv_aws_stores import settings as _settings
from agentenv_aws_stores._client import AwsClient, error_code

COMPRESS_OVER = 64 * 1024
MAX_ITEM_BYTES = 400 * 1024 - 2048
MAX_SORT_KEY_BYTES = 1024
TABLE_WAIT = 120.0


class DynamoDocumentStore(DocumentStore):
    """Settings: `table` (default "agentenv-documents"), `create_table` (create it, on-demand
    billing, on first use when missing; default true), plus the AWS connection settings."""

    type = "dynamodb"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("dynamodb", self.settings)
        self.table = str(_settings.need("dynamodb", self.options, "table"))
        self._client = AwsClient("dynamodb", "dynamodb", self.options)
        self._ready = False
        self._ready_lock = threading.Lock()

    def _db(self) -> Any:
        client = self._client.get()
        if not self._ready:
            with self._ready_lock:
                if not self._ready:
                    self._ensure_table(client)
                    self._ready = True
        return client

    def _ensure_table(self, client: Any) -> None:
        import botocore.exceptions

        try:
            status = client.describe_table(TableName=self.table)["Table"]["TableStatus"]
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) != "ResourceNotFoundException":
                raise
            if not self.options["create_table"]:
                raise StoreError(
                    f"dynamodb store: table {self.table!r} does not exist; create it (partition "
                    "key 'collection', sort key 'key', both strings) or set create_table = true "
                    "in [stores.dynamodb]"
                ) from None
            status = self._create_table(client)
        deadline = time.monotonic() + TABLE_WAIT
        while status != "ACTIVE":
            if time.monotonic() > deadline:
                raise StoreError(
                    f"dynamodb store: table {self.table!r} is still {status} after {TABLE_WAIT} s"
                )
            time.sleep(0.5)
            status = client.describe_table(TableName=self.table)["Table"]["TableStatus"]

    def _create_table(self, client: Any) -> str:
        import botocore.exceptions

        try:
            table = client.create_table(
                TableName=self.table,
                AttributeDefinitions=[
                    {"AttributeName": "collection", "AttributeType": "S"},
                    {"AttributeName": "key", "AttributeType": "S"},
                ],
                KeySchema=[
                    {"AttributeName": "collection", "KeyType": "HASH"},
                    {"AttributeName": "key", "KeyType": "RANGE"},
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            return table["TableDescription"]["TableStatus"]
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) != "ResourceInUseException":
                raise
            return "CREATING"

    def _key(self, collection: str, key: str) -> dict[str, Any]:
        check_collection(collection)
        check_document_key(key)
        check_document_key_bytes(key, MAX_SORT_KEY_BYTES, "DynamoDB's sort key limit")
        return {"collection": {"S": collection}, "key": {"S": key}}

    def _item(self, collection: str, key: str, doc: Mapping[str, Any]) -> dict[str, Any]:
        item = self._key(collection, key)
        packed = pack_document(
            doc,
            f"{collection}/{key}",
            compress_over=COMPRESS_OVER,
            limit=MAX_ITEM_BYTES,
            limit_name="DynamoDB's item limit",
        )
        if isinstance(packed, bytes):
            item["z"] = {"B": packed}
        else:
            item["doc"] = {"S": packed}
        return item

    @staticmethod
    def _doc(item: Mapping[str, Any], where: str) -> dict[str, Any]:
        if "z" in item:
            return unpack_document(item["z"]["B"], where)
        if "doc" in item:
            return unpack_document(item["doc"]["S"], where)
        raise StoreError(f"{where}: item has neither 'doc' nor 'z' attribute")

    async def get(self, collection: str, key: str) -> dict[str, Any] | None:
        ident = self._key(collection, key)

        def read(_: Any) -> dict[str, Any] | None:
            found = self._db().get_item(TableName=self.table, Key=ident, ConsistentRead=True)
            item = found.get("Item")
            return None if item is None else self._doc(item, f"{collection}/{key}")

        return await self._client.call(read, f"get {collection}/{key}")

    async def put(self, collection: str, key: str, doc: Mapping[str, Any]) -> None:
        item = self._item(collection, key, doc)
        await self._client.call(
            lambda _: self._db().put_item(TableName=self.table, Item=item),
            f"put {collection}/{key}",
        )

    async def create(self, collection: str, key: str, doc: Mapping[str, Any]) -> bool:
        item = self._item(collection, key, doc)

        def conditional_put(_: Any) -> bool:
            import botocore.exceptions

            try:
                self._db().put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#k)",
                    ExpressionAttributeNames={"#k": "key"},
                )
                return True
            except botocore.exceptions.ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    return False
                raise

        return await self._client.call(conditional_put, f"create {collection}/{key}")

    async def delete(self, collection: str, key: str) -> None:
        ident = self._key(collection, key)
        await self._client.call(
            lambda _: self._db().delete_item(TableName=self.table, Key=ident),
            f"delete {collection}/{key}",
        )

    async def list(self, collection: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        check_collection(collection)
        check_document_prefix(prefix)
        condition = "#c = :c"
        values: dict[str, Any] = {":c": {"S": collection}}
        if prefix:
            condition += " AND begins_with(#k, :p)"
            values[":p"] = {"S": prefix}

        def query(_: Any) -> list[tuple[str, dict[str, Any]]]:
            pages = (
                self._db()
                .get_paginator("query")
                .paginate(
                    TableName=self.table,
                    KeyConditionExpression=condition,
                    ExpressionAttributeNames={
                        "#c": "collection",
                        **({"#k": "key"} if prefix else {}),
                    },
                    ExpressionAttributeValues=values,
                    ConsistentRead=True,
                )
            )
            rows = []
            for page in pages:
                for item in page.get("Items", []):
                    key = item["key"]["S"]
                    rows.append((key, self._doc(item, f"{collection}/{key}")))
            return rows

        rows = await self._client.call(query, f"list {collection}/{prefix}*")
        return sorted(rows, key=lambda row: row[0])

    async def close(self) -> None:
        self._client.close()
