"""One Docker client per settings table, opened on first use, plus the daemon facts that
decide what can be enforced (cgroup controllers)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio

from agent_env.errors import SandboxError

T = TypeVar("T")
_lock = threading.Lock()
_clients: dict[tuple[str, float], Any] = {}


def get_client(settings: Mapping[str, Any] | None = None) -> Any:
    """A `docker.DockerClient` for `settings["base_url"]` (default: the environment's daemon)."""
    settings = settings or {}
    base_url = str(settings.get("base_url") or "")
    timeout = float(settings.get("api_timeout", 120))
    key = (base_url, timeout)
    with _lock:
        client = _clients.get(key)
        if client is None:
            import docker

            try:
                if base_url:
                    client = docker.DockerClient(
                        base_url=base_url, timeout=int(timeout), max_pool_size=32
                    )
                else:
                    client = docker.from_env(timeout=int(timeout), max_pool_size=32)
            except docker.errors.DockerException as e:
                raise SandboxError(
                    f"cannot reach the Docker daemon{f' at {base_url}' if base_url else ''}: {e}"
                ) from e
            _clients[key] = client
        return client


async def run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking docker call in a worker thread."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


@functools.lru_cache(maxsize=8)
def _info(client_id: int, client: Any) -> dict[str, Any]:
    return client.info()


def daemon_info(client: Any) -> dict[str, Any]:
    return _info(id(client), client)


def enforceable(client: Any) -> dict[str, bool]:
    """Which resource limits the daemon can enforce (from its cgroup support)."""
    info = daemon_info(client)
    return {
        "cpus": bool(info.get("CpuCfsQuota")) and bool(info.get("CpuCfsPeriod")),
        "memory": bool(info.get("MemoryLimit")),
        "pids": bool(info.get("PidsLimit")),
    }


def swap_limit(client: Any) -> bool:
    """Whether memory+swap can be capped too (else a memory limit still holds, swap aside)."""
    return bool(daemon_info(client).get("SwapLimit"))
