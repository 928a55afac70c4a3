"""A minimal HTTP/1.1 keep-alive POST pool on asyncio streams, for the gateway's hot path.

httpx costs several hundred microseconds per request in Python; forwarding a JSON-RPC POST to
a known env needs none of its generality. Stale pooled connections are retried once, only when
the server sent nothing back. A pool opens at most `max_connections` to its origin; further
requests wait their turn in arrival order (the wait counts against their timeout), so thousands
of calls in flight reuse a bounded set of keep-alive connections instead of churning sockets.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import attrs

from agentenv_protocol import jsonrpc

#: distinct request heads (path and headers) a pool keeps encoded
HEADS = 64


class ForwardError(Exception):
    """Base class: the exchange with the upstream failed."""


class ForwardConnectError(ForwardError):
    """The upstream refused or did not accept the connection."""


class ForwardConnectTimeout(ForwardConnectError):
    """The upstream did not accept the connection in time (a busy machine or network; a
    stopped server refuses at once)."""


class ForwardTimeout(ForwardError):
    """The upstream did not answer in time."""


@attrs.define(slots=True)
class RawResponse:
    status_code: int
    headers: dict[str, str]
    content: bytes
    url: str

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return jsonrpc.decode(self.content)


class _Stale(Exception):
    pass


def _expire(waiter: asyncio.Future, base: str, limit: float) -> None:
    if not waiter.done():
        waiter.set_exception(ForwardTimeout(f"{base} did not answer within {limit:g}s"))


def _parse(buf: bytearray) -> tuple[int, dict, bytes, bool] | None:
    """(status, headers, body, keep_alive) once `buf` holds a whole response, else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    keep = headers.get("connection", "").lower() != "close"
    start = end + 4
    if "content-length" in headers:
        size = int(headers["content-length"])
        if len(buf) < start + size:
            return None
        body = bytes(buf[start : start + size])
        del buf[: start + size]
        return status, headers, body, keep
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks: list[bytes] = []
        pos = start
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
            if size == 0:
                if buf.find(b"\r\n", eol + 2) < 0:
                    return None
                del buf[: buf.find(b"\r\n", eol + 2) + 2]
                return status, headers, b"".join(chunks), keep
            if len(buf) < eol + 2 + size + 2:
                return None
            chunks.append(bytes(buf[eol + 2 : eol + 2 + size]))
            pos = eol + 2 + size + 2
    if status in (204, 304) or 100 <= status < 200:
        del buf[:start]
        return status, headers, b"", keep
    return None  # delimited by the connection closing


class _Conn(asyncio.Protocol):
    """One keep-alive connection; `waiter` resolves with the parsed response."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        try:
            parsed = _parse(self.buf)
        except (ValueError, IndexError) as e:
            waiter.set_exception(ForwardError(f"malformed HTTP response: {e}"))
            return
        if parsed is not None:
            waiter.set_result(parsed)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if not self.buf:
            waiter.set_exception(_Stale())
            return
        end = self.buf.find(b"\r\n\r\n")
        try:
            parsed = _parse(self.buf)
            if parsed is None and end >= 0:
                lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (x.partition(":") for x in lines[1:])
                }
                if "content-length" not in headers and "transfer-encoding" not in headers:
                    parsed = (
                        int(lines[0].split(" ", 2)[1]),
                        headers,
                        bytes(self.buf[end + 4 :]),
                        False,
                    )
        except (ValueError, IndexError):
            parsed = None
        if parsed is None:
            waiter.set_exception(ForwardError("the connection closed in the middle of a response"))
        else:
            waiter.set_result(parsed)

    def send(self, data: bytes) -> None:
        if self.transport is None:
            raise ForwardError("the connection is not open")
        self.transport.write(data)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class PostPool:
    """Keep-alive connections to one origin; `post(path, body, headers)` returns a `RawResponse`."""

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout: float = 3.0,
        timeout: float = 120.0,
        max_connections: int = 256,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http":
            raise ValueError(f"PostPool speaks plain http only, not {base_url!r}")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.base = base_url.rstrip("/")
        self.host_header = parts.netloc.encode()
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self.max_connections = max_connections
        self._idle: list[_Conn] = []
        self._heads: dict[tuple, bytes] = {}
        self._turns = asyncio.Semaphore(max_connections)  # FIFO: waiters are served in order

    async def _connect(self, deadline: float, limit: float) -> _Conn:
        loop = asyncio.get_running_loop()
        connect_by = loop.time() + self.connect_timeout
        try:
            async with asyncio.timeout_at(min(deadline, connect_by)):
                _, conn = await loop.create_connection(_Conn, self.host, self.port)
        except TimeoutError:
            if deadline < connect_by:
                raise ForwardTimeout(f"{self.base} did not answer within {limit:g}s") from None
            raise ForwardConnectTimeout(
                f"connecting to {self.base} timed out after {self.connect_timeout:g}s"
            ) from None
        except OSError as e:
            raise ForwardConnectError(f"cannot connect to {self.base}: {e.strerror or e}") from None
        return conn

    async def post(
        self,
        path: str,
        body: bytes,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> RawResponse:
        head = self._head(path, headers)
        request = b"".join((head, str(len(body)).encode(), b"\r\n\r\n", body))
        limit = timeout if timeout is not None else self.timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        turns = self._turns
        if turns.locked():  # wait for a connection; the wait counts against the timeout
            try:
                async with asyncio.timeout_at(deadline):
                    await turns.acquire()
            except TimeoutError:
                raise ForwardTimeout(f"{self.base} did not answer within {limit:g}s") from None
        else:
            await turns.acquire()  # at once: a free connection needs no timeout scope
        try:
            return await self._exchange(loop, path, request, deadline, limit)
        finally:
            turns.release()

    def _head(self, path: str, headers: dict[str, str] | None) -> bytes:
        """The request head up to the Content-Length value; a caller's path and headers repeat
        call after call, so each distinct head is encoded once (at most `HEADS` kept)."""
        key = (path, tuple(headers.items()) if headers else ())
        head = self._heads.get(key)
        if head is None:
            parts = [b"POST ", path.encode(), b" HTTP/1.1\r\nhost: ", self.host_header]
            for name, value in key[1]:
                parts += [b"\r\n", name.encode("latin-1"), b": ", value.encode("latin-1")]
            parts.append(b"\r\ncontent-type: application/json\r\ncontent-length: ")
            head = b"".join(parts)
            if len(self._heads) >= HEADS:
                self._heads.clear()
            self._heads[key] = head
        return head

    async def _exchange(
        self,
        loop: asyncio.AbstractEventLoop,
        path: str,
        request: bytes,
        deadline: float,
        limit: float,
    ) -> RawResponse:
        """One request on a pooled (or new) connection before `deadline` (`loop` time, the
        running loop: asking for it again costs a getpid syscall); a stale reused one is retried
        once. One timer on the answer's future bounds the wait (cheaper than a timeout scope per
        call)."""
        for attempt in (0, 1):
            conn = None
            while self._idle and conn is None:
                candidate = self._idle.pop()
                conn = None if candidate.closed else candidate
            reused = conn is not None
            if conn is None:
                conn = await self._connect(deadline, limit)
            conn.buf.clear()
            waiter = conn.waiter = loop.create_future()
            timer = loop.call_at(deadline, _expire, waiter, self.base, limit)
            try:
                conn.send(request)
                status, rheaders, content, keep = await waiter
            except _Stale:
                conn.close()
                if reused and attempt == 0:
                    continue
                raise ForwardError(f"{self.base} closed the connection without answering") from None
            except BaseException:
                conn.close()
                raise
            finally:
                timer.cancel()
                conn.waiter = None
            if keep and not conn.closed and not conn.buf:
                self._idle.append(conn)
            else:
                conn.close()
            return RawResponse(status, rheaders, content, self.base + path)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
