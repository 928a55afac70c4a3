"""Small network helpers shared by the kernel, plugins and their test servers."""

from __future__ import annotations

import socket
import threading
import time

#: Seconds a port `free_port` handed out stays reserved in this process: long enough for the
#: server it was given to start and bind it (a local env's startup under load).
HOLD_SECONDS = 300.0
_TRIES = 64
_handed: dict[int, float] = {}  # port -> when its reservation ends (time.monotonic())
_lock = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on `host` right now, and never the same port twice in this process
    within `HOLD_SECONDS`.

    The kernel may give the same port to two `bind(port 0)` calls once the first socket closed,
    so envs deployed at once could be told the same port; the reservation rules that out
    within one process. Another process can still take the port before the server binds it:
    a caller that starts a server on it must check that what answers there is its own server
    (see the `mcp_server` env's secret check) and retry with a new port."""
    with _lock:
        now = time.monotonic()
        for port, until in list(_handed.items()):
            if until <= now:
                del _handed[port]
        for _ in range(_TRIES):
            with socket.socket() as s:
                s.bind((host, 0))
                port = int(s.getsockname()[1])
            if port not in _handed:
                _handed[port] = now + HOLD_SECONDS
                return port
    raise OSError(f"no free TCP port on {host} after {_TRIES} tries")
