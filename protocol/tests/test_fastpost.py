"""fastpost.PostPool's deadlines against a real (slow or silent) HTTP server on loopback."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentenv_protocol.fastpost import ForwardConnectError, ForwardTimeout, PostPool

pytestmark = pytest.mark.anyio

ANSWER = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


async def upstream(delay: float | None) -> tuple[asyncio.AbstractServer, str, list[int]]:
    """A server that answers each request after `delay` seconds (None: never); also returns
    how many connections it accepted so far (a one-item list)."""
    accepted = [0]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted[0] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(size)
                if delay is None:
                    await asyncio.sleep(3600)
                await asyncio.sleep(delay)
                writer.write(ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", accepted


async def test_a_silent_upstream_times_out_and_its_connection_is_not_reused():
    server, url, accepted = await upstream(None)
    pool = PostPool(url, timeout=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(ForwardTimeout, match="did not answer within 0.3s"):
            await pool.post("/mcp", b"{}")
        assert 0.25 < time.monotonic() - started < 2
        assert pool._idle == []  # the timed-out connection was closed, not pooled
    finally:
        await pool.aclose()
        server.close()


async def test_waiting_for_a_free_connection_counts_against_the_timeout():
    server, url, accepted = await upstream(0.4)
    pool = PostPool(url, max_connections=1)
    try:
        first = asyncio.ensure_future(pool.post("/mcp", b"{}", timeout=2))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(ForwardTimeout):
            await pool.post("/mcp", b"{}", timeout=0.2)  # still waiting for the one connection
        assert time.monotonic() - started < 0.39
        assert (await first).status_code == 200
        # answers keep coming on the pooled connection; one connection was ever opened
        assert (await pool.post("/mcp", b"{}", timeout=2)).json() == {}
        assert accepted[0] == 1
    finally:
        await pool.aclose()
        server.close()


async def test_a_refused_connection_fails_at_once():
    server, url, _ = await upstream(0)
    server.close()
    await server.wait_closed()
    pool = PostPool(url, timeout=5)
    started = time.monotonic()
    with pytest.raises(ForwardConnectError):
        await pool.post("/mcp", b"{}")
    assert time.monotonic() - started < 2
