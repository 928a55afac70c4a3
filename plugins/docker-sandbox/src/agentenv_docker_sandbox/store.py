"""Image stores: `docker` keeps images in the local daemon under names; `registry` pushes
to and pulls from an OCI registry through the daemon, and lists it over the registry API.

    [stores]
    image = "registry"
    [stores.registry]
    address = "127.0.0.1:5000"     # host[:port]; http for loopback or `insecure = true`
    namespace = "agentenv"         # optional repository prefix
    username = "env:REG_USER"      # optional basic/bearer auth
    password = "secret:reg-password"
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import StoreError
from agent_env.stores.base import ImageStore
from agentenv_docker_sandbox.client import get_client, run

_MANIFESTS = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)


def _errors():
    import docker.errors

    return docker.errors


def split_ref(ref: str) -> tuple[str, str]:
    """`repo[:tag]` -> (repo, tag); a port in the registry host is not a tag."""
    if "@" in ref:
        repo, digest = ref.split("@", 1)
        return repo, digest
    head, _, last = ref.rpartition("/")
    if ":" in last:
        name, tag = last.rsplit(":", 1)
        return (f"{head}/{name}" if head else name), tag
    return ref, "latest"


def _tag_local(client: Any, local_ref: str, target: str, what: str) -> tuple[str, str]:
    """Tag the local daemon's image `local_ref` as `target`; the (repo, tag) it now has.
    A missing image is a StoreError that starts with `what`."""
    try:
        image = client.images.get(local_ref)
    except _errors().ImageNotFound:
        raise StoreError(f"{what} {local_ref!r}: not in the local Docker daemon") from None
    repo, tag = split_ref(target)
    image.tag(repo, tag)
    return repo, tag


class DockerImageStore(ImageStore):
    """Images in the local Docker daemon (`[stores] image = "docker"`, the default image store
    when this plugin is installed). `push` tags a local image under a name."""

    type = "docker"

    @property
    def client(self) -> Any:
        return get_client(self.settings)

    async def push(self, local_ref: str, name: str) -> str:
        def go() -> str:
            repo, tag = _tag_local(self.client, local_ref, name, "cannot store image")
            return f"{repo}:{tag}"

        return await run(go)

    async def pull(self, ref: str) -> str:
        if not await self.exists(ref):
            raise KeyError(ref)
        return ref

    async def exists(self, ref: str) -> bool:
        def go() -> bool:
            try:
                self.client.images.get(ref)
                return True
            except _errors().ImageNotFound:
                return False

        return await run(go)

    async def list(self, prefix: str = "") -> list[str]:
        def go() -> list[str]:
            tags = {t for image in self.client.images.list() for t in image.tags}
            return sorted(t for t in tags if t.startswith(prefix))

        return await run(go)


class RegistryImageStore(ImageStore):
    """An OCI registry (`[stores.registry] address = "host:port"`): push/pull through the
    local daemon, existence and listing through the registry's HTTP API."""

    type = "registry"

    def __init__(
        self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None
    ) -> None:
        super().__init__(settings, home=home)
        self._token: str | None = None

    @property
    def client(self) -> Any:
        return get_client(self.settings)

    @property
    def address(self) -> str:
        address = str(self.settings.get("address") or "").strip().rstrip("/")
        if not address:
            raise StoreError('[stores.registry] needs `address` (e.g. "127.0.0.1:5000")')
        return re.sub(r"^https?://", "", address)

    @property
    def _scheme(self) -> str:
        host = self.address.split(":")[0]
        insecure = self.settings.get("insecure")
        if insecure is None:
            insecure = host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")
        return "http" if insecure else "https"

    def full(self, name: str) -> str:
        """The registry reference of `name` (already-qualified references stay as they are)."""
        if name.startswith(self.address + "/"):
            return name
        namespace = str(self.settings.get("namespace") or "").strip("/")
        return f"{self.address}/{namespace + '/' if namespace else ''}{name}"

    def _auth_config(self) -> dict[str, str] | None:
        user = self.settings.get("username")
        if not user:
            return None
        return {"username": str(user), "password": str(self.settings.get("password") or "")}

    def _basic_auth(self) -> str | None:
        """The `Authorization: Basic` value of the configured user, None without one."""
        auth = self._auth_config()
        if not auth:
            return None
        return (
            "Basic " + base64.b64encode(f"{auth['username']}:{auth['password']}".encode()).decode()
        )

    # -- registry HTTP API ---------------------------------------------------------------

    def _request(
        self, method: str, path: str, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, Any]:
        import urllib.error  # with urllib.request ~10 ms: only registry stores talk HTTP
        import urllib.request

        url = f"{self._scheme}://{self.address}{path}"
        headers = dict(headers or {})
        for attempt in range(2):
            request = urllib.request.Request(url, method=method, headers=headers)
            if self._token:
                request.add_header("Authorization", f"Bearer {self._token}")
            elif basic := self._basic_auth():
                request.add_header("Authorization", basic)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, response.read(), response.headers
            except urllib.error.HTTPError as e:
                if (
                    e.code == 401
                    and attempt == 0
                    and self._bearer(e.headers.get("WWW-Authenticate", ""))
                ):
                    continue
                return e.code, e.read(), e.headers
            except OSError as e:
                raise StoreError(f"registry {self.address} is unreachable: {e}") from e
        return 401, b"", {}

    def _bearer(self, challenge: str) -> bool:
        """Fetch a token for a `Bearer realm=...` challenge; False when it is not one."""
        if not challenge.lower().startswith("bearer "):
            return False
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = params.pop("realm", "")
        if not realm:
            return False
        import urllib.request

        request = urllib.request.Request(f"{realm}?{urllib.parse.urlencode(params)}")
        if basic := self._basic_auth():
            request.add_header("Authorization", basic)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                body = json.loads(response.read())
        except (OSError, ValueError) as e:
            raise StoreError(f"registry {self.address}: token request failed: {e}") from e
        self._token = body.get("token") or body.get("access_token")
        return bool(self._token)

    def _repo_path(self, ref: str) -> tuple[str, str]:
        repo, tag = split_ref(self.full(ref))
        return repo[len(self.address) + 1 :], tag

    def _catalog(self) -> list[str]:
        repos: list[str] = []
        last = ""
        while True:
            query = urllib.parse.urlencode({"n": 1000, **({"last": last} if last else {})})
            status, body, _ = self._request("GET", f"/v2/_catalog?{query}")
            if status != 200:
                raise StoreError(f"registry {self.address}: catalog answered {status}")
            page = json.loads(body or b"{}").get("repositories") or []
            repos += page
            if len(page) < 1000:
                return repos
            last = page[-1]

    # -- ImageStore ----------------------------------------------------------------------

    async def push(self, local_ref: str, name: str) -> str:
        target = self.full(name)

        def go() -> str:
            errors = _errors()
            repo, tag = _tag_local(self.client, local_ref, target, "cannot push")
            try:
                for line in self.client.images.push(
                    repo, tag=tag, stream=True, decode=True, auth_config=self._auth_config()
                ):
                    if line.get("error"):
                        raise StoreError(f"push of {target} failed: {line['error']}")
            except errors.APIError as e:
                raise StoreError(f"push of {target} failed: {e.explanation or e}") from e
            finally:
                if local_ref != f"{repo}:{tag}":
                    try:
                        self.client.images.remove(f"{repo}:{tag}", noprune=True)
                    except errors.APIError:
                        pass
            return f"{repo}:{tag}"

        return await run(go)

    async def pull(self, ref: str) -> str:
        target = self.full(ref)
        if not await self.exists(target):
            raise KeyError(ref)

        def go() -> str:
            repo, tag = split_ref(target)
            try:
                self.client.images.pull(repo, tag=tag, auth_config=self._auth_config())
            except _errors().NotFound:
                raise KeyError(ref) from None
            except _errors().APIError as e:
                raise StoreError(f"pull of {target} failed: {e.explanation or e}") from e
            return f"{repo}:{tag}"

        return await run(go)

    async def exists(self, ref: str) -> bool:
        repo, tag = self._repo_path(ref)

        def go() -> bool:
            status, body, _ = self._request(
                "HEAD", f"/v2/{repo}/manifests/{tag}", {"Accept": _MANIFESTS}
            )
            if status == 200:
                return True
            if status == 404:
                return False
            raise StoreError(f"registry {self.address}: HEAD {repo}:{tag} answered {status}")

        return await run(go)

    async def list(self, prefix: str = "") -> list[str]:
        def go() -> list[str]:
            refs = []
            for repo in self._catalog():
                status, body, _ = self._request("GET", f"/v2/{repo}/tags/list")
                if status != 200:
                    continue
                for tag in json.loads(body or b"{}").get("tags") or []:
                    refs.append(f"{self.address}/{repo}:{tag}")
            return sorted(
                r
                for r in refs
                if r.startswith(prefix) or r[len(self.address) + 1 :].startswith(prefix)
            )

        return await run(go)
