"""Test support: moto's AWS API server in this process, and the settings that point each of
our backends at it. Used by our tests and by `bench/cloud_stores.py`; needs `moto[server]`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

CREDENTIALS = {
    "region": "us-east-1",
    "access_key_id": "testing",
    "secret_access_key": "testing",
}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Serve moto's AWS APIs on a free loopback port; yields the endpoint URL."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def settings(endpoint: str, **extra: Any) -> dict[str, Any]:
    """Backend settings that reach the moto server at `endpoint` with dummy credentials."""
    return {**CREDENTIALS, "endpoint_url": endpoint, **extra}


def require_emulators() -> bool:
    """True on CI, where a missing emulator must fail the tests instead of skipping them."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
