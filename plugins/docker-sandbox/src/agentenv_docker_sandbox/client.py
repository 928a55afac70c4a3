"""One Docker client per settings table, opened on first use, plus the daemon facts that
decide what can be enforced (cgroup controllers)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from agent_env.aio import to_thread
from agent_env.errors import SandboxError

T = TypeVar("T")
_lock = threading.Lock()
_clients: dict[tuple[Any, ...], Any] = {}


_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
#: `[sandbox.docker]` keys of a daemon reached over TCP with TLS (as `docker --tlsverify`).
TLS_KEYS = ("tls_verify", "tls_ca_cert", "tls_client_cert", "tls_client_key")


def remote_host(settings: Mapping[str, Any] | None) -> str | None:
    """The address this machine reaches the daemon's host at, when the daemon is on another
    machine (`base_url` tcp/http(s)/ssh to a non-loopback host, or `publish_host` set); None
    for a local daemon (ports are then published on 127.0.0.1)."""
    from urllib.parse import urlparse

    settings = settings or {}
    explicit = settings.get("publish_host")
    if explicit:
        return str(explicit)
    base_url = str(settings.get("base_url") or "")
    parsed = urlparse(base_url)
    if parsed.scheme not in ("tcp", "http", "https", "ssh") or not parsed.hostname:
        return None
    return (
        None
        if parsed.hostname in _LOOPBACK or parsed.hostname.startswith("127.")
        else parsed.hostname
    )


def tls_config(settings: Mapping[str, Any]) -> Any:
    """A `docker.tls.TLSConfig` from the `tls_*` settings; None when none is set."""
    if not any(settings.get(k) for k in TLS_KEYS):
        return None
    from docker.tls import TLSConfig

    cert, key = settings.get("tls_client_cert"), settings.get("tls_client_key")
    if bool(cert) != bool(key):
        raise SandboxError(
            "[sandbox.docker] tls_client_cert and tls_client_key go together: set both or neither"
        )
    for name in ("tls_ca_cert", "tls_client_cert", "tls_client_key"):
        value = settings.get(name)
        if value and not Path(str(value)).expanduser().is_file():
            raise SandboxError(f"[sandbox.docker] {name}: no such file: {value}")
    ca = settings.get("tls_ca_cert")
    verify = settings.get("tls_verify")
    client = (str(Path(cert).expanduser()), str(Path(key).expanduser())) if cert and key else None
    return TLSConfig(
        client_cert=client,
        ca_cert=str(Path(ca).expanduser()) if ca else None,
        verify=bool(ca) if verify is None else bool(verify),
    )


def get_client(settings: Mapping[str, Any] | None = None) -> Any:
    """A `docker.DockerClient` for `settings["base_url"]` (default: the environment's daemon),
    with TLS when the `tls_*` settings ask for it."""
    settings = settings or {}
    base_url = str(settings.get("base_url") or "")
    timeout = float(settings.get("api_timeout", 120))
    tls_key = tuple(str(settings.get(k) or "") for k in TLS_KEYS)
    key = (base_url, timeout, *tls_key)
    with _lock:
        client = _clients.get(key)
        if client is None:
            import docker

            try:
                if base_url:
                    tls = tls_config(settings)
                    client = docker.DockerClient(
                        base_url=base_url.replace("https://", "tcp://", 1) if tls else base_url,
                        timeout=int(timeout),
                        max_pool_size=32,
                        tls=tls or False,
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
    return await to_thread(functools.partial(fn, *args, **kwargs))


@functools.lru_cache(maxsize=8)
def _info(client_id: int, client: Any) -> dict[str, Any]:
    return client.info()


def daemon_info(client: Any) -> dict[str, Any]:
    return _info(id(client), client)


@functools.lru_cache(maxsize=8)
def _podman(client_id: int, client: Any) -> bool:
    components = client.version().get("Components") or []
    return any("podman" in str(c.get("Name", "")).lower() for c in components)


def is_podman(client: Any) -> bool:
    """Whether the daemon is podman's Docker-compatible service (cached per client)."""
    return _podman(id(client), client)


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
