"""`[stores] image = "ecr"`: images in Amazon ECR, one ECR repository per image name under
`repository_prefix` (default "agentenv").

The ECR API creates repositories and hands out registry credentials (an authorization token,
refreshed well before its 12 hours run out); pushing, pulling and checking tags go through
the local Docker daemon and the registry's HTTP API, reusing the docker-sandbox plugin's
`registry` image store. `registry` overrides the registry host (tests point it at a local
OCI registry standing in for ECR's).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.client import RefreshingCredentials
from agentenv_aws_stores import settings as _settings
from agentenv_aws_stores._client import AwsClient, error_code
from agentenv_docker_sandbox.store import RegistryImageStore, split_ref

TOKEN_REFRESH = 3600.0
_REPO_RE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*")


class EcrImageStore(RefreshingCredentials, RegistryImageStore):
    """Settings: `registry` (host override; default ECR's endpoint for the account and
    region), `repository_prefix`, `create_repositories` (default true), `insecure_registry`
    (plain http to `registry`), plus the AWS connection settings."""

    type = "ecr"
    token_refresh = TOKEN_REFRESH

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        self.options = _settings.check("ecr", self.settings)
        self.prefix = str(self.options["repository_prefix"] or "").strip("/")
        if self.prefix and not _REPO_RE.fullmatch(self.prefix):
            raise ConfigError(
                f"[stores.ecr] repository_prefix = {self.prefix!r}: use lowercase letters, "
                "digits and . _ - separated by '/'"
            )
        self._client = AwsClient("ecr", "ecr", self.options)
        self._auth_lock = threading.Lock()
        self._repos: set[str] = set()
        self.settings = {"address": self.options.get("registry") or "", "namespace": self.prefix}

    def _refresh_auth(self) -> None:
        """Put the registry address and a fresh token into the `registry` store's settings."""
        with self._auth_lock:
            if self._auth_at is not None and time.monotonic() - self._auth_at < TOKEN_REFRESH:
                return
            data = self._client.sync(
                lambda c: c.get_authorization_token()["authorizationData"][0],
                "get a registry authorization token",
            )
            user, _, password = base64.b64decode(data["authorizationToken"]).decode().partition(":")
            address = self.options.get("registry") or data["proxyEndpoint"]
            address = re.sub(r"^https?://", "", str(address)).rstrip("/")
            registry_settings: dict[str, Any] = {
                "address": address,
                "namespace": self.prefix,
                "username": user,
                "password": password,
            }
            if self.options.get("insecure_registry"):
                registry_settings["insecure"] = True
            self.settings = registry_settings
            self._token = None
            self._auth_at = time.monotonic()

    def repository(self, ref: str) -> str:
        """The ECR repository name of `ref` (a name like "tools/app:v1" or a full reference)."""
        repo, _ = split_ref(self.full(ref))
        return repo[len(self.address) + 1 :]

    def _ensure_repository(self, repo: str) -> None:
        import botocore.exceptions

        if repo in self._repos:
            return

        def create(client: Any) -> None:
            try:
                client.create_repository(repositoryName=repo)
            except botocore.exceptions.ClientError as exc:
                if error_code(exc) != "RepositoryAlreadyExistsException":
                    raise

        if self.options["create_repositories"]:
            self._client.sync(create, f"create repository {repo!r}")
        self._repos.add(repo)

    async def push(self, local_ref: str, name: str) -> str:
        await self._ready()
        repo = self.repository(name)
        if not _REPO_RE.fullmatch(repo):
            raise StoreError(
                f"image name {name!r}: ECR repository {repo!r} must be lowercase letters, "
                "digits and . _ - separated by '/'"
            )

        def check_then_create() -> None:
            import docker.errors

            try:
                self.client.images.get(local_ref)
            except docker.errors.ImageNotFound:
                raise StoreError(
                    f"cannot push {local_ref!r}: not in the local Docker daemon"
                ) from None
            self._ensure_repository(repo)

        await anyio.to_thread.run_sync(check_then_create)
        return await super().push(local_ref, name)

    async def list(self, prefix: str = "") -> list[str]:
        """Repositories from the ECR API (ECR has no registry catalog), tags from the registry;
        `prefix` filters by full reference, repository path or image name."""
        await self._ready()

        def scan() -> list[str]:
            def repositories(client: Any) -> list[str]:
                pages = client.get_paginator("describe_repositories").paginate()
                names = [r["repositoryName"] for page in pages for r in page["repositories"]]
                under = self.prefix + "/" if self.prefix else ""
                return [n for n in names if n.startswith(under)]

            refs = []
            for repo in self._client.sync(repositories, "list repositories"):
                status, body, _ = self._request("GET", f"/v2/{repo}/tags/list")
                if status == 404:
                    continue
                if status != 200:
                    raise StoreError(f"registry {self.address}: tags of {repo} answered {status}")
                for tag in json.loads(body or b"{}").get("tags") or []:
                    refs.append(f"{self.address}/{repo}:{tag}")
            return sorted(r for r in refs if self._matches(r, prefix))

        return await anyio.to_thread.run_sync(scan)

    def _matches(self, ref: str, prefix: str) -> bool:
        """`prefix` may be a full reference, a repository path or an image name's start."""
        path = ref[len(self.address) + 1 :]
        name = path[len(self.prefix) + 1 :] if self.prefix else path
        return ref.startswith(prefix) or path.startswith(prefix) or name.startswith(prefix)

    async def close(self) -> None:
        self._client.close()


__all__ = ["EcrImageStore"]
