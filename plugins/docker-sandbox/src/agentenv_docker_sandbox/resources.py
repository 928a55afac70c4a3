"""Removing what sandboxes leave in the daemon (containers, anonymous volumes, run networks)
and reaping what dead owners left, by label. Blocking: call through a worker thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Set
from typing import Any

from agent_env.errors import SandboxError
from agentenv_docker_sandbox import labels

_network_lock = threading.Lock()


def _errors():
    import docker.errors

    return docker.errors


def remove_container(client: Any, container_id: str) -> None:
    """Remove the container and its anonymous volumes; no error when already gone."""
    errors = _errors()
    try:
        client.api.remove_container(container_id, v=True, force=True)
    except errors.NotFound:
        return
    except errors.APIError as e:
        if "already in progress" in str(e) or "No such container" in str(e):
            _wait_gone(client, container_id)
            return
        raise SandboxError(
            f"cannot remove container {container_id[:12]}: {e.explanation or e}"
        ) from e


def _wait_gone(client: Any, container_id: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.api.inspect_container(container_id)
        except _errors().NotFound:
            return
        time.sleep(0.1)


def remove_network_if_empty(client: Any, name: str) -> bool:
    """Remove our network `name` when no container is attached; True when it is gone."""
    errors = _errors()
    with _network_lock:
        try:
            info = client.api.inspect_network(name)
        except errors.NotFound:
            return True
        if labels.MANAGED not in (info.get("Labels") or {}) or info.get("Containers"):
            return False
        try:
            client.api.remove_network(info["Id"])
        except errors.NotFound:
            return True
        except errors.APIError as e:
            if "active endpoints" in str(e):
                return False
            raise SandboxError(f"cannot remove network {name}: {e.explanation or e}") from e
        return True


def ensure_network(client: Any, name: str, *, owner: str, run_id: str) -> None:
    errors = _errors()
    with _network_lock:
        try:
            client.api.inspect_network(name)
            return
        except errors.NotFound:
            pass
        try:
            client.api.create_network(
                name,
                driver="bridge",
                labels={
                    labels.MANAGED: "docker",
                    labels.OWNER: owner,
                    labels.RUN: run_id,
                    labels.NETWORK: "run",
                },
            )
        except errors.APIError as e:
            if "already exists" not in str(e):
                raise SandboxError(f"cannot create network {name}: {e.explanation or e}") from e


def reap_orphans(client: Any, adopt: Set[str] = frozenset()) -> list[str]:
    """Remove our containers whose owner died (and whose lease names no live owner), then our
    networks left empty by a dead owner. Returns the sandbox ids removed."""
    reaped: list[str] = []
    errors = _errors()
    for info in client.api.containers(all=True, filters={"label": labels.MANAGED}):
        tags = info.get("Labels") or {}
        sandbox_id = tags.get(labels.SANDBOX) or (info.get("Names") or ["?"])[0].lstrip("/")
        if sandbox_id in adopt or info["Id"] in adopt:
            continue
        if labels.owner_alive(tags.get(labels.OWNER)) or labels.lease_alive(tags.get(labels.LEASE)):
            continue
        remove_container(client, info["Id"])
        reaped.append(sandbox_id)
    for net in client.api.networks(filters={"label": labels.MANAGED}):
        tags = net.get("Labels") or {}
        if labels.owner_alive(tags.get(labels.OWNER)):
            continue
        try:
            remove_network_if_empty(client, net["Name"])
        except (SandboxError, errors.APIError):
            continue
    return reaped
