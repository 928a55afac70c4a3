"""The content-addressed images this agent-env home built, as a cache kind. A build labels its
image with the context digest (`io.agentenv.context`) and the home's id (`io.agentenv.home`):
the daemon may be shared with other users and other homes, whose images prune leaves alone.
An image any container still uses (running or stopped) counts as in use."""

from __future__ import annotations

import datetime as dt
from typing import Any

from agent_env.caches import CacheEntry, CacheKind, LiveUse, home_id

LABEL = "io.agentenv.context"
HOME_LABEL = "io.agentenv.home"


def build_labels(digest: str) -> dict[str, str]:
    """The labels of an image built here from a context whose digest is `digest`."""
    return {LABEL: digest, HOME_LABEL: home_id()}


def _epoch(stamp: str | None) -> float:
    if not stamp:
        return 0.0
    try:
        return dt.datetime.fromisoformat(stamp[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return 0.0


class ImageCache(CacheKind):
    type = "images"
    description = "Docker images built from env and agent folders (content-addressed)"

    def _client(self) -> Any:
        from agentenv_docker_sandbox.client import get_client

        return get_client()

    def location(self) -> str:
        return f"docker images built by this home (label {HOME_LABEL}={home_id()})"

    def entries(self) -> list[CacheEntry]:
        out = []
        mine = {"label": [LABEL, f"{HOME_LABEL}={home_id()}"]}  # both labels must match
        for image in self._client().images.list(filters=mine):
            attrs = image.attrs
            used = _epoch((attrs.get("Metadata") or {}).get("LastTagTime")) or _epoch(
                attrs.get("Created")
            )
            for tag in image.tags:
                out.append(
                    CacheEntry(
                        kind=self.type,
                        name=tag,
                        size=int(attrs.get("Size") or 0),
                        last_used=used,
                        refs=(image.id, tag),
                        location=image.id,
                    )
                )
        return out

    def in_use(self, entry: CacheEntry, live: LiveUse) -> bool:
        if super().in_use(entry, live):
            return True
        # sparse: a container removed while listed must not fail the check (NotFound)
        return bool(
            self._client().containers.list(all=True, sparse=True, filters={"ancestor": entry.name})
        )

    def remove(self, entry: CacheEntry) -> None:
        import docker

        try:
            self._client().images.remove(entry.name, noprune=False)
        except docker.errors.ImageNotFound:
            pass
