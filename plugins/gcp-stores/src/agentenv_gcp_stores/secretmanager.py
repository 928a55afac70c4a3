"""`[stores] secret = "secretmanager"`: each secret is one Secret Manager secret with id
`<prefix><name>` (default prefix "agentenv-"); `set` adds a version, `get` reads the latest.

The client speaks REST (`transport="rest"`), so `endpoint_url` can point it at any HTTP
server that implements the API, as the tests do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.base import SecretStore
from agent_env.stores.names import check_secret_name, secret_names_under
from agentenv_gcp_stores import settings as _settings
from agentenv_gcp_stores._client import GcpClient, credentials

_PREFIX_RE = re.compile(r"[A-Za-z0-9_-]{0,100}")


class SecretManagerStore(SecretStore):
    """Settings: `project` (required), `prefix` (default "agentenv-"), `endpoint_url`, plus
    the credential settings. New secrets use automatic replication."""

    type = "secretmanager"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("secretmanager", self.settings)
        self.project = str(_settings.need("secretmanager", self.options, "project"))
        self.prefix = str(self.options["prefix"] or "")
        if not _PREFIX_RE.fullmatch(self.prefix):
            raise ConfigError(
                f"[stores.secretmanager] prefix = {self.prefix!r}: use letters, digits, '_' "
                "and '-' only"
            )
        self._client = GcpClient("secretmanager", self.options, self._build)

    def _build(self) -> Any:
        from google.cloud import secretmanager

        endpoint = self.options["endpoint_url"]
        return secretmanager.SecretManagerServiceClient(
            transport="rest",
            credentials=credentials("secretmanager", self.options),
            client_options={"api_endpoint": endpoint} if endpoint else None,
        )

    @property
    def _timeout(self) -> float:
        return float(self.options["timeout"] or 60)

    def _path(self, name: str) -> str:
        return f"projects/{self.project}/secrets/{self.prefix}{check_secret_name(name)}"

    async def get(self, name: str) -> str | None:
        path = self._path(name)

        def read(client: Any) -> str | None:
            import google.api_core.exceptions as gexc

            try:
                found = client.access_secret_version(
                    name=f"{path}/versions/latest", timeout=self._timeout
                )
            except gexc.NotFound:
                return None
            try:
                return found.payload.data.decode("utf-8")
            except UnicodeDecodeError:
                raise StoreError(f"secret {name!r} holds binary data, not UTF-8 text") from None

        return await self._client.call(read, f"read secret {name!r}")

    async def set(self, name: str, value: str) -> None:
        path = self._path(name)
        if not isinstance(value, str):
            raise StoreError(f"secret {name!r}: the value must be a string")
        payload = {"data": value.encode("utf-8")}

        def write(client: Any) -> None:
            import google.api_core.exceptions as gexc

            try:
                added = client.add_secret_version(
                    parent=path, payload=payload, timeout=self._timeout
                )
            except gexc.NotFound:
                try:
                    client.create_secret(
                        parent=f"projects/{self.project}",
                        secret_id=path.rpartition("/")[2],
                        secret={"replication": {"automatic": {}}},
                        timeout=self._timeout,
                    )
                except gexc.AlreadyExists:
                    pass
                added = client.add_secret_version(
                    parent=path, payload=payload, timeout=self._timeout
                )
            self._destroy_previous(client, added.name)

        await self._client.call(write, f"write secret {name!r}")

    def _destroy_previous(self, client: Any, version_name: str) -> None:
        """Destroy the version before the one just added: each version is billed while it
        is active, and only the latest is ever read. A concurrent writer's newer version is
        never touched, since each writer only destroys the one below its own."""
        import google.api_core.exceptions as gexc

        head, _, number = version_name.rpartition("/")
        if not number.isdigit() or int(number) <= 1:
            return
        try:
            client.destroy_secret_version(name=f"{head}/{int(number) - 1}", timeout=self._timeout)
        except (gexc.NotFound, gexc.FailedPrecondition):
            pass

    async def delete(self, name: str) -> None:
        path = self._path(name)

        def remove(client: Any) -> None:
            import google.api_core.exceptions as gexc

            try:
                client.delete_secret(name=path, timeout=self._timeout)
            except gexc.NotFound:
                pass

        await self._client.call(remove, f"delete secret {name!r}")

    async def list(self) -> list[str]:
        def scan(client: Any) -> list[str]:
            request: dict[str, Any] = {"parent": f"projects/{self.project}"}
            if self.prefix:
                request["filter"] = f"name:{self.prefix}"
            secrets = client.list_secrets(request=request, timeout=self._timeout)
            return secret_names_under(self.prefix, (s.name.rpartition("/")[2] for s in secrets))

        return await self._client.call(scan, "list secrets")

    async def close(self) -> None:
        self._client.close()
