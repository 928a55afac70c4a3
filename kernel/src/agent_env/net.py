"""Small network helpers shared by the kernel, plugins and their test servers."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on `host` right now (racy by nature: a loser fails at bind)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
