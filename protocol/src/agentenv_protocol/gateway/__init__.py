"""The MCP gateway: `Gateway` (the ASGI app), `serve_gateway` (run it in a background thread),
`gateway_server` (run it in the current event loop), the env clock and the call log."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import attrs

from agentenv_protocol.gateway.app import Gateway, GatewayError
from agentenv_protocol.gateway.auth import CAPABILITY_PREFIX, Caller, TokenInPath
from agentenv_protocol.gateway.clock import ClockError, EnvClock
from agentenv_protocol.gateway.trajectory import Trajectory, redact
from agentenv_protocol.serving import RunningServer, serve_in_thread, serving

__all__ = [
    "Gateway",
    "GatewayError",
    "Caller",
    "TokenInPath",
    "CAPABILITY_PREFIX",
    "GatewayServer",
    "EnvClock",
    "ClockError",
    "Trajectory",
    "redact",
    "serve_gateway",
    "start_gateway",
    "gateway_server",
]


@attrs.define
class GatewayServer:
    """A running gateway: `url` (base), `mcp_url`, `admin_token`, and `stop()`."""

    gateway: Gateway
    url: str
    _running: RunningServer

    @property
    def mcp_url(self) -> str:
        return self.url + "/mcp"

    @property
    def admin_token(self) -> str:
        return self.gateway.admin_token

    def stop(self) -> None:
        self._running.stop()

    def __enter__(self) -> GatewayServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_gateway(gateway: Gateway, *, host: str = "127.0.0.1", port: int = 0) -> GatewayServer:
    """Start `gateway` in a background thread (its own event loop); returns once it serves.
    Raises `GatewayError` when the envs cannot be fronted (unreachable env, tool clash)."""
    try:
        running = serve_in_thread(gateway, host=host, port=port)
    except (RuntimeError, TimeoutError) as e:
        if gateway.startup_error is not None:
            raise gateway.startup_error from None
        raise GatewayError(f"the gateway did not start: {e}") from e
    return GatewayServer(gateway=gateway, url=running.url, running=running)


async def start_gateway(
    gateway: Gateway, *, host: str = "127.0.0.1", port: int = 0
) -> GatewayServer:
    """`serve_gateway` for async callers: starts it from a worker thread, so the caller's event
    loop keeps running while the gateway discovers its envs."""
    import anyio

    return await anyio.to_thread.run_sync(lambda: serve_gateway(gateway, host=host, port=port))


@contextlib.asynccontextmanager
async def gateway_server(
    gateway: Gateway, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve `gateway` in the current event loop for the block; yields its base URL."""
    await gateway.discover()
    async with serving(gateway, host=host, port=port) as url:
        yield url
