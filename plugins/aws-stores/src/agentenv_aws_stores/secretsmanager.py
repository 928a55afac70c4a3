"""`[stores] secret = "secretsmanager"`: each secret is one AWS Secrets Manager secret named
`<prefix><name>` (default prefix "agentenv/"), holding the value as its `SecretString`.

Deleting skips the recovery window, so a name can be set again at once; setting a name whose
secret is still scheduled for deletion restores it first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.base import SecretStore
from agent_env.stores.names import check_secret_name, secret_names_under
from agentenv_aws_stores import settings as _settings
from agentenv_aws_stores._client import AwsClient, error_code

_PREFIX_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_+=.@-")


class SecretsManagerStore(SecretStore):
    """Settings: `prefix` (default "agentenv/"), `kms_key_id` (for new secrets; default the
    account's AWS-managed key), plus the AWS connection settings."""

    type = "secretsmanager"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("secretsmanager", self.settings)
        self.prefix = str(self.options["prefix"] or "")
        if set(self.prefix) - _PREFIX_CHARS:
            raise ConfigError(
                f"[stores.secretsmanager] prefix = {self.prefix!r}: use letters, digits and "
                "/_+=.@- only"
            )
        self._client = AwsClient("secretsmanager", "secretsmanager", self.options)

    def _id(self, name: str) -> str:
        return self.prefix + check_secret_name(name)

    async def get(self, name: str) -> str | None:
        secret_id = self._id(name)

        def read(client: Any) -> str | None:
            import botocore.exceptions

            try:
                found = client.get_secret_value(SecretId=secret_id)
            except botocore.exceptions.ClientError as exc:
                code = error_code(exc)
                if code == "ResourceNotFoundException":
                    return None
                if code == "InvalidRequestException" and "delet" in str(exc).lower():
                    return None
                raise
            value = found.get("SecretString")
            if value is None:
                raise StoreError(f"secret {name!r} holds binary data, not a string")
            return value

        return await self._client.call(read, f"read secret {name!r}")

    async def set(self, name: str, value: str) -> None:
        secret_id = self._id(name)
        if not isinstance(value, str):
            raise StoreError(f"secret {name!r}: the value must be a string")

        def write(client: Any) -> None:
            import botocore.exceptions

            for _ in range(5):
                try:
                    client.put_secret_value(SecretId=secret_id, SecretString=value)
                    return
                except botocore.exceptions.ClientError as exc:
                    code = error_code(exc)
                    if code == "InvalidRequestException" and "delet" in str(exc).lower():
                        client.restore_secret(SecretId=secret_id)
                        continue
                    if code != "ResourceNotFoundException":
                        raise
                kwargs: dict[str, Any] = {"Name": secret_id, "SecretString": value}
                if self.options.get("kms_key_id"):
                    kwargs["KmsKeyId"] = self.options["kms_key_id"]
                try:
                    client.create_secret(**kwargs)
                    return
                except botocore.exceptions.ClientError as exc:
                    if error_code(exc) != "ResourceExistsException":
                        raise
            raise StoreError(f"secret {name!r}: gave up after repeated conflicting writes")

        await self._client.call(write, f"write secret {name!r}")

    async def delete(self, name: str) -> None:
        secret_id = self._id(name)

        def remove(client: Any) -> None:
            import botocore.exceptions

            try:
                client.delete_secret(SecretId=secret_id, ForceDeleteWithoutRecovery=True)
            except botocore.exceptions.ClientError as exc:
                if error_code(exc) != "ResourceNotFoundException":
                    raise

        await self._client.call(remove, f"delete secret {name!r}")

    async def list(self) -> list[str]:
        def scan(client: Any) -> list[str]:
            kwargs: dict[str, Any] = {}
            if self.prefix:
                kwargs["Filters"] = [{"Key": "name", "Values": [self.prefix]}]
            pages = client.get_paginator("list_secrets").paginate(**kwargs)
            entries = [e for page in pages for e in page.get("SecretList", [])]
            live = [e.get("Name", "") for e in entries if not e.get("DeletedDate")]
            return secret_names_under(self.prefix, live)

        return await self._client.call(scan, "list secrets")

    async def close(self) -> None:
        self._client.close()
