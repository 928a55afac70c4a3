"""`[stores] image = "artifactregistry"`: images in one Artifact Registry Docker repository,
`<location>-docker.pkg.dev/<project>/<repository>/<name>:<tag>`.

Push, pull, existence and listing go through the local Docker daemon and the registry's HTTP
API, reusing the docker-sandbox plugin's `registry` image store; credentials are an OAuth
access token (user `oauth2accesstoken`) from the configured Google credentials, refreshed
before it expires. The repository itself must exist (create it with gcloud or Terraform).
`registry` overrides the host (tests point it at a local OCI registry standing in for AR).
"""

from __future__ import annotations

import builtins
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.client import RefreshingCredentials
from agentenv_docker_sandbox.store import RegistryImageStore
from agentenv_gcp_stores import settings as _settings
from agentenv_gcp_stores._client import credentials

TOKEN_REFRESH = 600.0
API = "https://artifactregistry.googleapis.com"
_PART_RE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


class ArtifactRegistryImageStore(RefreshingCredentials, RegistryImageStore):
    """Settings: `project` (required), `location` (default "us"), `repository` (default
    "agentenv"), `registry` (host override), `insecure_registry`, plus the credential
    settings (`anonymous = true` sends no credentials)."""

    type = "artifactregistry"
    token_refresh = TOKEN_REFRESH

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
        self.api_path = f"projects/{project}/locations/{location}/repositories/{repository}"
        self.settings = {
            "address": re.sub(r"^https?://", "", str(host)).rstrip("/"),
            "namespace": self.namespace,
        }
        if self.options["insecure_registry"]:
            self.settings["insecure"] = True
        self._auth_lock = threading.Lock()
        self._credentials: Any = None

    def _refresh_auth(self) -> None:
        """Put a fresh access token into the `registry` store's settings (none if anonymous)."""
        if self.options["anonymous"]:
            return
        with self._auth_lock:
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

    async def list(self, prefix: str = "") -> list[str]:
        """Images of this repository; `prefix` filters by full reference or image name.

        Artifact Registry lists through its API (`dockerImages.list`); a `registry` override
        without an `endpoint_url` (a mirror or stand-in registry) lists through the registry's
        own catalog instead."""
        await self._ready()
        under = f"{self.address}/{self.namespace}/"
        if self.options["registry"] and not self.options["endpoint_url"]:
            refs = [r for r in await super().list() if r.startswith(under)]
        else:
            refs = await anyio.to_thread.run_sync(self._list_from_api, under)
        return sorted(r for r in refs if r.startswith(prefix) or r[len(under) :].startswith(prefix))

    def _list_from_api(self, under: str) -> builtins.list[str]:
        import json
        import urllib.error
        import urllib.parse
        import urllib.request

        endpoint = str(self.options["endpoint_url"] or API).rstrip("/")
        headers = {}
        if self.settings.get("password"):
            headers["Authorization"] = f"Bearer {self.settings['password']}"
        refs, token = [], ""
        for _ in range(10_000):
            query = urllib.parse.urlencode(
                {"pageSize": 1000, **({"pageToken": token} if token else {})}
            )
            url = f"{endpoint}/v1/{self.api_path}/dockerImages?{query}"
            try:
                with urllib.request.urlopen(
                    urllib.request.Request(url, headers=headers), timeout=self._timeout
                ) as response:
                    page = json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as exc:
                raise StoreError(
                    f"artifactregistry store: cannot list {self.api_path}: HTTP {exc.code} "
                    f"{exc.read()[:300].decode(errors='replace')}"
                ) from None
            except (OSError, ValueError) as exc:
                raise StoreError(
                    f"artifactregistry store: cannot list {self.api_path}: {exc}"
                ) from None
            for image in page.get("dockerImages") or []:
                path = str(image.get("uri", "")).split("@", 1)[0]
                name = path.split(f"/{self.namespace}/", 1)[-1]
                refs += [f"{under}{name}:{tag}" for tag in image.get("tags") or []]
            token = page.get("nextPageToken") or ""
            if not token:
                return refs
        raise StoreError(f"artifactregistry store: listing {self.api_path} never ended")

    @property
    def _timeout(self) -> float:
        return float(self.options["timeout"] or 60)
