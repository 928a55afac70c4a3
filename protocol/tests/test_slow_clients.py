"""Slow clients (slowloris) against the gateway as the runner serves it (`TokenInPath` over
`Gateway`, `serve_in_thread`): real sockets on 127.0.0.1 that trickle their headers or their
body are disconnected once the header or body deadline passes, and one role cannot hold more
than its share of connections. Before, 800 trickling connections were still open after 45 s."""

from __future__ import annotations

import contextlib
import socket
import time

import httpx
import pytest

from agentenv_protocol.gateway import Gateway, TokenInPath
from agentenv_protocol.serving import HEADER_TIMEOUT, serve_in_thread

CONNECTIONS = 50
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@contextlib.contextmanager
def gateway_server(header_timeout: float, body_timeout: float, **options):
    gateway = Gateway({}, **options)
    server = serve_in_thread(
        TokenInPath(gateway), header_timeout=header_timeout, body_timeout=body_timeout
    )
    try:
        yield gateway, server.url
    finally:
        server.stop()


def _open(url: str, count: int, head: bytes) -> list[socket.socket]:
    host, port = url.removeprefix("http://").split(":")
    socks = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.sendall(head)
        sock.setblocking(False)
        socks.append(sock)
    return socks


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""  # the server closed it (an answer would be bytes)
    except BlockingIOError:
        return False
    except OSError:
        return True


def trickle(socks: list[socket.socket], every: float, limit: float) -> list[float]:
    """Send one byte on every open socket each `every` seconds until the server has closed
    them all or `limit` passed; the seconds each one lived (`limit` for those still open)."""
    start = time.monotonic()
    lived: dict[int, float] = {}
    while len(lived) < len(socks) and time.monotonic() - start < limit:
        for i, sock in enumerate(socks):
            if i in lived:
                continue
            if _closed(sock):
                lived[i] = time.monotonic() - start
                continue
            with contextlib.suppress(BlockingIOError, OSError):
                sock.send(b"a")
        time.sleep(every)
    for sock in socks:
        sock.close()
    return [lived.get(i, limit) for i in range(len(socks))]


def _post_head(token: str, length: int) -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def _list_tools(url: str, token: str) -> httpx.Response:
    headers = {**MCP_HEADERS, "authorization": f"Bearer {token}"}
    return httpx.post(url + "/mcp", json=LIST, headers=headers, timeout=10)


def test_trickled_headers_are_cut_off_at_the_header_deadline():
    with gateway_server(header_timeout=1.0, body_timeout=30.0) as (gateway, url):
        socks = _open(url, CONNECTIONS, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ")
        lived = trickle(socks, every=0.1, limit=10.0)
        assert max(lived) < 4.0, sorted(lived)
        assert min(lived) > 0.8, sorted(lived)  # the deadline, not an instant refusal
        assert _list_tools(url, gateway.issue_token("agent")).status_code == 200


def test_a_connection_that_sends_nothing_is_closed_too():
    with gateway_server(header_timeout=1.0, body_timeout=30.0) as (_, url):
        lived = trickle(_open(url, CONNECTIONS, b""), every=0.2, limit=10.0)
    assert max(lived) < 4.0, sorted(lived)


def test_a_trickled_body_is_cut_off_at_the_body_deadline():
    with gateway_server(header_timeout=1.0, body_timeout=2.0) as (gateway, url):
        token = gateway.issue_token("agent")
        socks = _open(url, CONNECTIONS, _post_head(token, 100_000))
        lived = trickle(socks, every=0.1, limit=15.0)
        assert max(lived) < 5.5, sorted(lived)
        assert min(lived) > 1.8, sorted(lived)
        assert _list_tools(url, token).status_code == 200


def test_one_role_cannot_hold_more_than_its_connections():
    """Five slow requests of role `agent` fill its share: a sixth is answered 503 at once,
    while the verifier's requests still pass; once they are cut off, the agent is served."""
    with gateway_server(header_timeout=1.0, body_timeout=2.0, max_connections_per_role=5) as (
        gateway,
        url,
    ):
        agent, verifier = gateway.issue_token("agent"), gateway.issue_token("verifier")
        socks = _open(url, 5, _post_head(agent, 1000))
        time.sleep(0.3)  # the five are in flight, reading their bodies
        refused = _list_tools(url, agent)
        assert refused.status_code == 503, refused.text
        assert "role 'agent' already has 5 requests in flight" in refused.text
        assert _list_tools(url, verifier).status_code == 200
        lived = trickle(socks, every=0.1, limit=10.0)
        assert max(lived) < 5.0, sorted(lived)
        assert _list_tools(url, agent).status_code == 200


def test_the_default_deadline_holds_for_the_run_gateway():
    """No options: what `RunGateway` serves. 50 trickling connections are gone within the
    default header deadline (plus slack)."""
    gateway = Gateway({})
    server = serve_in_thread(TokenInPath(gateway))
    try:
        socks = _open(server.url, CONNECTIONS, b"GET /card HTTP/1.1\r\nX-Pad: ")
        lived = trickle(socks, every=0.5, limit=HEADER_TIMEOUT + 10)
    finally:
        server.stop()
    assert min(lived) > HEADER_TIMEOUT - 0.5 and max(lived) < HEADER_TIMEOUT + 3, sorted(lived)


def test_the_per_role_limit_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        Gateway({}, max_connections_per_role=0)


def test_an_a2a_agent_served_by_serve_cuts_trickled_headers_off():
    # `agentenv_protocol.agent.server.serve` (how an agent's own process serves it) has the
    # same guard: its header deadline is the default one
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = (
        "from agentenv_protocol.agent.server import A2AAgent, serve\n"
        "class Quiet(A2AAgent):\n"
        "    name = 'quiet'\n"
        f"serve(Quiet(), host='127.0.0.1', port={port})\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/.well-known/agent-card.json", timeout=2).status_code < 500:
                    break
            assert time.monotonic() < deadline and proc.poll() is None, "the agent did not start"
            time.sleep(0.1)
        socks = _open(url, 20, b"POST /a2a HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ")
        lived = trickle(socks, every=0.2, limit=HEADER_TIMEOUT + 10)
        assert max(lived) < HEADER_TIMEOUT + 5, sorted(lived)
        assert min(lived) > HEADER_TIMEOUT - 1, sorted(lived)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
