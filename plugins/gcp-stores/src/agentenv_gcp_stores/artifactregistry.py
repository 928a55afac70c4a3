"""`[stores] image = "artifactregistry"`: images in one Artifact Registry Docker repository,
`<location>-docker.pkg.dev/<project>/<repository>/<name>:<tag>`.

Push, pull, existence and listing go through the local Docker daemon and the registry's HTTP
API, reusing the docker-sandbox plugin's `registry` image store; credentials are an OAuth
access token (user `oauth2accesstoken`) from the configured Google credentials, refreshed
before it expires. The repository itself must exist (create it with gcloud or Terraform).
`registry` overrides the host (tests point it at a local OCI registry standing in for AR).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from agent_env.errors import ConfigError, StoreError
from agentenv_docker_sandbox.store import RegistryImageStore
from agentenv_gcp_stores import settings as _settings
from agentenv_gcp_stores._client import credentials

TOKEN_REFRESH = 600.0
_PART_RE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


class ArtifactRegistryImageStore(RegistryImageStore):
    """Settings: `project` (required), `location` (default "us"), `repository` (default
    "agentenv"), `registry` (host override), `insecure_registry`, plus the credential
    settings (`anonymous = true` sends no credentials)."""

    type = "artifactregistry"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("artifactregistry", self.settings)
        project = str(_settings.need("artifactregistry", self.options, "project"))
        repository = str(_settings.need("artifactregistry", self.options, "repository"))
        location = str(_settings.need("artifactregistry", self.options, "location"))
        for key, value in (("repository", repository), ("location", location)):
            if not _PART_RE.fullmatch(value):
                raise ConfigError(
                    f"[stores.artifactregistry] {key} = {value!r}: use lowercase letters, "
                    "digits and . _ -"
                )
        host = self.options["registry"] or f"{location}-docker.pkg.dev"
        self.namespace = f"{project.replace(':', '/')}/{repository}"
        self.settings = {
            "address": re.sub(r"^https?://", "", str(host)).rstrip("/"),
            "namespace": self.namespace,
        }
        if self.options["insecure_registry"]:
            self.settings["insecure"] = True
        self._lock = threading.Lock()
        self._auth_at: float | None = None
        self._credentials: Any = None

    def _refresh_auth(self) -> None:
        """Put a fresh access token into the `registry` store's settings (none if anonymous)."""
        if self.options["anonymous"]:
            return
        with self._lock:
            if self._auth_at is not None and time.monotonic() - self._auth_at < TOKEN_REFRESH:
                return
            import google.auth
            import google.auth.exceptions
            import google.auth.transport.requests

            try:
                creds = self._credentials or credentials("artifactregistry", self.options)
                if creds is None:
                    creds, _ = google.auth.default(
                        scopes=["https://www.googleapis.com/auth/cloud-platform"]
                    )
                creds.refresh(google.auth.transport.requests.Request())
            except google.auth.exceptions.GoogleAuthError as exc:
                raise StoreError(
                    f"artifactregistry store: cannot get an access token ({exc}); set "
                    "credentials_file or credentials_json in [stores.artifactregistry], or "
                    "configure Application Default Credentials"
                ) from None
            self._credentials = creds
            self.settings = {
                **self.settings,
                "username": "oauth2accesstoken",
                "password": creds.token,
            }
            self._token = None
            self._auth_at = time.monotonic()

    async def _ready(self) -> None:
        await anyio.to_thread.run_sync(self._refresh_auth)

    async def push(self, local_ref: str, name: str) -> str:
        await self._ready()
        return await super().push(local_ref, name)

    async def pull(self, ref: str) -> str:
        await self._ready()
        return await super().pull(ref)

    async def exists(self, ref: str) -> bool:
        await self._ready()
        return await super().exists(ref)

    async def list(self, prefix: str = "") -> list[str]:
        """Images of this repository; `prefix` filters by full reference or image name."""
        await self._ready()
        under = f"{self.address}/{self.namespace}/"
        refs = [r for r in await super().list() if r.startswith(under)]
        return [r for r in refs if r.startswith(prefix) or r[len(under):].startswith(prefix)]
