"""A minimal HTTP/1.1 keep-alive POST pool on asyncio streams, for the gateway's hot path.

httpx costs several hundred microseconds per request in Python; forwarding a JSON-RPC POST to
a known env needs none of its generality. Stale pooled connections are retried once, only when
the server sent nothing back.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit


class ForwardError(Exception):
    """Base class: the exchange with the upstream failed."""


class ForwardConnectError(ForwardError):
    """The upstream refused or did not accept the connection."""


class ForwardTimeout(ForwardError):
    """The upstream did not answer in time."""


class RawResponse:
    __slots__ = ("status_code", "headers", "content", "url")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes, url: str) -> None:
        self.status_code, self.headers, self.content, self.url = status_code, headers, content, url

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


class _Stale(Exception):
    pass


class PostPool:
    """Keep-alive connections to one origin; `post(path, body, headers)` returns a `RawResponse`."""

    def __init__(self, base_url: str, *, connect_timeout: float = 3.0, timeout: float = 120.0,
                 max_idle: int = 256) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http":
            raise ValueError(f"PostPool speaks plain http only, not {base_url!r}")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.base = base_url.rstrip("/")
        self.host_header = parts.netloc.encode()
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.max_idle = max_idle
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(asyncio.open_connection(self.host, self.port, limit=1 << 20),
                                          self.connect_timeout)
        except asyncio.TimeoutError:
            raise ForwardConnectError(f"connecting to {self.base} timed out after {self.connect_timeout:g}s") from None
        except OSError as e:
            raise ForwardConnectError(f"cannot connect to {self.base}: {e.strerror or e}") from None

    async def post(self, path: str, body: bytes, headers: dict[str, str] | None = None,
                   timeout: float | None = None) -> RawResponse:
        head = [b"POST ", path.encode(), b" HTTP/1.1\r\nhost: ", self.host_header,
                b"\r\ncontent-type: application/json\r\ncontent-length: ", str(len(body)).encode(), b"\r\n"]
        for key, value in (headers or {}).items():
            head += [key.encode("latin-1"), b": ", value.encode("latin-1"), b"\r\n"]
        head.append(b"\r\n")
        request = b"".join(head) + body
        limit = timeout if timeout is not None else self.timeout
        for attempt in (0, 1):
            reused = bool(self._idle)
            conn = self._idle.pop() if reused else await self._connect()
            try:
                async with asyncio.timeout(limit):
                    return await self._exchange(conn, request, path)
            except _Stale:
                conn[1].close()
                if reused and attempt == 0:
                    continue
                raise ForwardError(f"{self.base} closed the connection without answering") from None
            except asyncio.TimeoutError:
                conn[1].close()
                raise ForwardTimeout(f"{self.base} did not answer within {limit:g}s") from None
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
                conn[1].close()
                raise ForwardError(f"{self.base} broke off the exchange: {type(e).__name__}: {e}") from None
            except BaseException:
                conn[1].close()
                raise
        raise AssertionError("unreachable")

    async def _exchange(self, conn, request: bytes, path: str) -> RawResponse:
        reader, writer = conn
        writer.write(request)
        try:
            await writer.drain()
            raw = await reader.readuntil(b"\r\n\r\n")
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            if isinstance(e, asyncio.IncompleteReadError) and e.partial:
                raise
            raise _Stale() from None
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        keep = headers.get("connection", "").lower() != "close"
        if "content-length" in headers:
            content = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")
                    break
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
            content = b"".join(chunks)
        elif status in (204, 304) or 100 <= status < 200:
            content = b""
        else:
            content, keep = await reader.read(), False
        if keep and len(self._idle) < self.max_idle:
            self._idle.append(conn)
        else:
            writer.close()
        return RawResponse(status, headers, content, self.base + path)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()
