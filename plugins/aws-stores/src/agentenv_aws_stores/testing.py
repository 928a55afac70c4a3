"""Test support: moto's AWS API server in this process, and the settings that point each of
our backends at it. Used by our tests and by `bench/cloud_stores.py`; needs `moto[server]`."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

CREDENTIALS = {
    "region": "us-east-1",
    "access_key_id": "testing",
    "secret_access_key": "testing",
}


def _serialize_dynamodb(app: Any) -> Any:
    """DynamoDB applies each write atomically; moto checks a condition and then writes in
    two Python steps, so concurrent requests could both pass `attribute_not_exists`. One
    DynamoDB request at a time makes moto as linearizable as the service it stands in for
    (other services still run concurrently)."""
    lock = threading.Lock()

    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            return app(environ, start_response)
        with lock:
            return list(app(environ, start_response))

    return wsgi


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Serve moto's AWS APIs on a free loopback port; yields the endpoint URL."""
    import logging

    from moto.moto_server import threaded_moto_server as tms
    from werkzeug.serving import make_server

    class Server(tms.ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = _serialize_dynamodb(tms.DomainDispatcherApplication(tms.create_backend_app))
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=tms.MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = Server(ip_address="127.0.0.1", port=0, verbose=False)
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
    """True on CI, where a missing emulator must fail the tests instead of skipping them
    (kept for callers; `agent_env.testing.require.require(problem)` does the skip-or-fail)."""
    from agent_env.testing.require import on_ci

    return on_ci()


def _moto_endpoint() -> Iterator[str]:
    try:
        import moto.server  # noqa: F401
    except ImportError as exc:
        from agent_env.testing.require import require

        require(f"moto[server] is not installed (uv sync --all-groups): {exc}")
    with moto_server() as url:
        yield url


def moto_endpoint_fixture() -> Any:
    """A session-scoped pytest fixture serving moto on loopback (import it in a conftest as
    `moto_endpoint = moto_endpoint_fixture()`); on CI a missing moto fails, never skips."""
    import pytest

    return pytest.fixture(scope="session", name="moto_endpoint")(_moto_endpoint)
