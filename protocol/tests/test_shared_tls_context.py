"""Clients built per call share the process's TLS context: building one loads the CA bundle
(tens of ms, about 60 under load), and a verifier reads env data on every episode."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentenv_protocol import client_helpers
from agentenv_protocol.verifier import env_data_async

pytestmark = pytest.mark.anyio


class _Answers(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        result = {"parts": [{"name": "state"}]} if body["method"] != "card" else {}
        data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture
def contexts_built(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    built: list[object] = []
    real = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        built.append(args or kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    return built


async def test_verifier_env_reads_share_one_tls_context(server_url, contexts_built):
    for _ in range(5):
        parts = await env_data_async(f"{server_url}/mcp", "notes")
        assert parts == [{"name": "state"}]
    # the shared context is built at most once per process (maybe by an earlier test)
    assert len(contexts_built) <= 1, f"{len(contexts_built)} TLS contexts for 5 reads"


async def test_env_rpc_helpers_share_one_tls_context(server_url, contexts_built):
    for _ in range(5):
        await client_helpers._rpc(server_url, "data/get", {}, timeout=5, verify=True)
    assert len(contexts_built) <= 1, f"{len(contexts_built)} TLS contexts for 5 calls"


async def test_a_callers_own_verify_setting_is_kept(server_url, contexts_built):
    """verify=False (or a CA bundle, or a caller's context) goes to httpx unchanged."""
    from agentenv_protocol._http import tls_context, tls_verify

    assert tls_verify(True) is tls_context()
    assert tls_verify(False) is False
    assert tls_verify("/etc/ca.pem") == "/etc/ca.pem"
    await client_helpers._rpc(server_url, "data/get", {}, timeout=5, verify=False)
