"""Small host-network helpers shared by the kernel and plugins."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` right now (racy by nature; a loser fails at bind)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
