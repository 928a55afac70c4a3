"""A TCP relay that makes a loopback-only server (the run's gateway) reachable from containers:
it listens on the docker bridge's host address and forwards to `127.0.0.1:<port>`. The gateway
still authenticates every call; the relay only moves bytes. The relays are an instance
resource (`RELAYS`): they stop when the task instance ends.

`reachable_url` is what agent kinds call: any host-loopback URL (the gateway, a local model
server) as a process in a sandbox of a given provider reaches it."""

from __future__ import annotations

import socket
import socketserver
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agent_env.resources import InstanceKey

_LOCK = threading.Lock()
LOOPBACK = {"127.0.0.1", "localhost", "0.0.0.0", "::1"}


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Relay:
    """Listens on `host:<free port>`, forwards every connection to `target`."""

    def __init__(self, host: str, target: tuple[str, int]) -> None:
        upstream = target

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    out = socket.create_connection(upstream, timeout=10)
                except OSError:
                    return
                out.settimeout(None)
                back = threading.Thread(target=_pump, args=(out, self.request), daemon=True)
                back.start()
                _pump(self.request, out)
                back.join(timeout=5)
                out.close()

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"agentenv-relay-{self.port}",
            daemon=True,
        )
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


#: the relays of one task instance, by the loopback port they forward to
RELAYS: InstanceKey[dict[int, Relay]] = InstanceKey("core-steps.relays")


def relay_url(url: str, relays: dict[int, Relay], *, host: str) -> str:
    """`url` (loopback) as reachable through a relay on `host`; one relay per port in
    `relays` (the instance's, see `RELAYS`)."""
    parts = urlsplit(url)
    port = parts.port or 80
    with _LOCK:
        relay = relays.get(port)
        if relay is None:
            relay = relays[port] = Relay(host, ("127.0.0.1", port))
    return urlunsplit(parts._replace(netloc=f"host.docker.internal:{relay.port}"))


def stop_relays(relays: dict[int, Relay]) -> None:
    """Stop every relay in `relays` (the instance's teardown does, via `RELAYS`)."""
    with _LOCK:
        stopping = list(relays.values())
        relays.clear()
    for relay in stopping:
        relay.stop()


async def reachable_url(ctx: Any, url: str, provider: str | None) -> str:
    """`url` as a process in a sandbox of `provider` reaches it: unchanged for the local
    sandbox and for non-loopback hosts, else through one of the instance's relays on the
    provider's host address (`ctx` is the step's `StepContext`)."""
    if provider in (None, "local") or urlsplit(url).hostname not in LOOPBACK:
        return url
    import anyio

    where = ctx.sandbox_provider(provider).host_address
    host = await anyio.to_thread.run_sync(where) or "0.0.0.0"
    relays = await ctx.instance_resource(
        RELAYS, start=dict, close=lambda r: anyio.to_thread.run_sync(stop_relays, r)
    )
    return relay_url(url, relays, host=host)
