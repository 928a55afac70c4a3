"""`ToolSession`: the existing SDK's MCP client for a loop of one's own (a trainer's rollout, an
eval harness), kept under its name and shape, on this package's own MCP requester (httpx only,
whatever `mcp` version the loop pins).

`async with ToolSession(mcp_url=url, role="alice") as s: await s.list_tools(); await
s.call_tool("x", {...})`. A tool's failure is a result with `isError`; `ToolSessionError` is a
failure at the MCP level; `httpx.TransportError` a failed connection; `TimeoutError` a request
that outlived `timeout`. Nothing is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx

from agentenv_protocol.client import EnvClient, ToolResult
from agentenv_protocol.errors import EnvUnavailable, ProtocolError
from agentenv_protocol.types import EnvironmentTool

_CLOSE_TIMEOUT_S = 5.0


class ToolSessionError(RuntimeError):
    """An MCP-level failure: a JSON-RPC error, an HTTP error status, an unreadable reply, or a
    session the server no longer knows. A tool that fails is not one (its result has `isError`)."""


def _split(mcp_url: str) -> tuple[str, str]:
    scheme, sep, rest = mcp_url.partition("://")
    if not sep or not rest:
        raise ValueError(f"ToolSession: mcp_url must be an http(s) URL, got {mcp_url!r}")
    host, slash, path = rest.partition("/")
    return f"{scheme}://{host}", "/" + path if slash else "/mcp"


class ToolSession:
    """One MCP session on an env's `mcp_url`, used on the event loop that opened it."""

    def __init__(
        self,
        *,
        mcp_url: str,
        role: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 600.0,
    ) -> None:
        self.mcp_url = mcp_url
        self.role = role
        self.timeout = timeout
        self._base, self._path = _split(mcp_url)
        self._headers = dict(headers or {})
        self._client: EnvClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def session_id(self) -> str | None:
        mcp = self._client._mcp if self._client is not None else None
        return (mcp.session_id or None) if mcp is not None else None

    async def __aenter__(self) -> ToolSession:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> ToolSession:
        """Start a session (ending the one this object holds, if any)."""
        await self.close()
        self._loop = asyncio.get_running_loop()
        self._client = EnvClient(
            self._base,
            timeout=self.timeout,
            role=self.role,
            headers=self._headers,
            mcp_path=self._path,
        )
        return self

    async def close(self) -> None:
        """End the session on the server (waiting at most 5 s) and close the connection; a
        server that is already gone is not an error."""
        client, self._client = self._client, None
        if client is None:
            return
        try:
            session = client._mcp.session_id if client._mcp is not None else None
            if session:
                with contextlib.suppress(httpx.HTTPError):
                    await client.http.delete(
                        self.mcp_url,
                        headers={"mcp-session-id": session},
                        timeout=min(self.timeout, _CLOSE_TIMEOUT_S),
                    )
        finally:
            await client.aclose()

    def _open(self) -> EnvClient:
        if self._client is None:
            raise RuntimeError(
                "the ToolSession is not open: use `async with ToolSession(...)` or `await open()`"
            )
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError("the ToolSession was opened on another event loop; use it there")
        return self._client

    async def _call(self, method: str, coro: Any) -> Any:
        try:
            return await coro
        except EnvUnavailable as e:
            cause = e.__cause__
            if isinstance(cause, httpx.TimeoutException):
                raise TimeoutError(f"{method} did not finish within {self.timeout}s") from cause
            if isinstance(cause, httpx.TransportError):
                raise cause from None
            raise ToolSessionError(f"{method}: {e}") from None
        except ProtocolError as e:
            raise ToolSessionError(f"{method} failed: {e}") from None

    async def list_tools(self) -> list[EnvironmentTool]:
        """The tools the session's role may use, as a card lists them (plus any listed extras)."""
        return await self._call("tools/list", self._open().list_tools())

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call a tool; its failure comes back as a result with `isError` set."""
        return await self._call("tools/call", self._open().call_tool(name, arguments or {}))
