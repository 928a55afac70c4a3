"""`ToolSession`: the existing SDK's MCP client for a loop of one's own (a trainer's rollout, an
eval harness), kept under its name and shape, speaking streamable HTTP with httpx only (whatever
`mcp` version the loop pins).

`async with ToolSession(mcp_url=url, role="alice") as s: await s.list_tools(); await
s.call_tool("x", {...})`. Opening initializes an MCP session (its id is `session_id`; a stateless
server gives none); closing ends it. A tool's failure is a result with `isError`;
`ToolSessionError` is a failure at the MCP level (a JSON-RPC error, an HTTP error status, a reply
or result that cannot be read, a session the server dropped); `httpx.TransportError` a failed
connection; `TimeoutError` a request that outlived `timeout` (the session stays usable). Nothing
is retried: after a failed call the env's state is unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

import httpx
from pydantic import ValidationError

from agentenv_protocol import _http
from agentenv_protocol.client import ToolResult
from agentenv_protocol.context import ROLE_HEADER
from agentenv_protocol.mcp_http import ACCEPT, HANDSHAKE_VERSIONS, is_reply, sse_data
from agentenv_protocol.types import EnvironmentTool

_CLOSE_TIMEOUT_S = 5.0
_CLIENT_INFO = {"name": "agentenv-tool-session", "version": "1"}


class ToolSessionError(RuntimeError):
    """An MCP-level failure: a JSON-RPC error, an HTTP error status, an unreadable reply, or a
    session the server no longer knows. A tool that fails is not one (its result has `isError`)."""


def _check_url(mcp_url: str) -> None:
    scheme, sep, rest = mcp_url.partition("://")
    if scheme not in ("http", "https") or not sep or not rest:
        raise ValueError(f"ToolSession: mcp_url must be an http(s) URL, got {mcp_url!r}")


def _reply(method: str, response: httpx.Response, rid: int) -> dict:
    """The JSON-RPC response to `rid` in a JSON or event-stream body."""
    ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json":
        try:
            message = json.loads(response.content)
        except ValueError:
            raise ToolSessionError(f"{method}: unreadable reply: {response.text[:200]}") from None
    elif ctype == "text/event-stream":
        message = None
        for data in sse_data(response.text):
            try:
                event = json.loads(data)
            except ValueError:
                raise ToolSessionError(f"{method}: unreadable reply: event {data[:200]}") from None
            if is_reply(event, rid):
                message = event
                break
        if message is None:
            raise ToolSessionError(f"{method}: the event stream ended before the reply")
    else:
        raise ToolSessionError(f"{method}: unexpected content type {ctype or '(none)'!r}")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise ToolSessionError(f"{method}: the reply is not a JSON-RPC object")
    error = message.get("error")
    if error is not None:
        if not isinstance(error, dict):
            raise ToolSessionError(f"{method} failed: {error!r}")
        raise ToolSessionError(
            f"{method} failed: {error.get('message')} (code {error.get('code')})"
        )
    if message.get("id") != rid:
        raise ToolSessionError(f"{method}: the reply answers request {message.get('id')!r}")
    if not isinstance(message.get("result"), dict):
        raise ToolSessionError(f"{method}: the reply has no result object")
    return message["result"]


def _tool_result(result: dict) -> ToolResult:
    content = result.get("content", [])
    readable = (
        isinstance(content, list)
        and all(isinstance(block, dict) for block in content)
        and all(isinstance(b.get("text"), str) for b in content if b.get("type") == "text")
    )
    if not readable or not isinstance(result.get("isError", False), bool):
        raise ToolSessionError(f"tools/call: unreadable result: {json.dumps(result)[:200]}")
    return ToolResult(
        is_error=result.get("isError", False),
        content=content,
        structured=result.get("structuredContent"),
    )


def _tools_page(result: dict) -> tuple[list[EnvironmentTool], str | None]:
    tools, cursor = result.get("tools"), result.get("nextCursor")
    try:
        if not isinstance(tools, list) or not isinstance(cursor, str | None):
            raise ValueError("tools is not a list")
        return [EnvironmentTool.model_validate(t) for t in tools], cursor
    except (ValidationError, ValueError):
        raise ToolSessionError(
            f"tools/list: unreadable result: {json.dumps(result)[:200]}"
        ) from None


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
        _check_url(mcp_url)
        self.mcp_url = mcp_url
        self.role = role
        self.timeout = timeout
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._headers = {**(headers or {}), **({ROLE_HEADER: role} if role else {})}
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ids = itertools.count(1)

    @property
    def _client(self) -> httpx.AsyncClient | None:
        """The open connection (None while closed), under the name the existing SDK gives it."""
        return self._http

    async def __aenter__(self) -> ToolSession:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> ToolSession:
        """Initialize a session (ending the one this object holds first, if any); a failed
        initialize raises and leaves the session closed."""
        await self.close()
        self._loop = asyncio.get_running_loop()
        self.session_id = self.protocol_version = None
        self._http = _http.client(self.timeout, headers=self._headers)
        try:
            result = await self._request(
                "initialize",
                {
                    "protocolVersion": HANDSHAKE_VERSIONS[-1],
                    "capabilities": {},
                    "clientInfo": _CLIENT_INFO,
                },
            )
            version = result.get("protocolVersion")
            self.protocol_version = version if isinstance(version, str) else None
            await self._post(
                {"jsonrpc": "2.0", "method": "notifications/initialized"}, "initialize"
            )
        except BaseException:
            await self._drop()
            raise
        return self

    async def close(self) -> None:
        """End the session on the server (waiting at most `timeout`, and never more than 5 s) and
        close the connection; a server that is already gone is not an error. `session_id` keeps
        the id of the session that ended."""
        if self._http is None:
            return
        self._on_own_loop()
        try:
            if self.session_id:
                with contextlib.suppress(httpx.HTTPError, TimeoutError):
                    await asyncio.wait_for(
                        self._http.delete(self.mcp_url, headers=self._session_headers()),
                        min(self.timeout, _CLOSE_TIMEOUT_S),
                    )
        finally:
            await self._drop()

    async def _drop(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    def _on_own_loop(self) -> None:
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError("the ToolSession was opened on another event loop; use it there")

    def _session_headers(self) -> dict[str, str]:
        headers = {}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    async def _post(self, message: dict, method: str) -> httpx.Response:
        """POST one message; an HTTP error status is a `ToolSessionError`."""
        if self._http is None:
            raise RuntimeError(
                "the ToolSession is not open: use `async with ToolSession(...)` or `await open()`"
            )
        self._on_own_loop()
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        headers.update(self._session_headers())
        try:
            response = await asyncio.wait_for(
                self._http.post(
                    self.mcp_url, content=json.dumps(message).encode(), headers=headers
                ),
                self.timeout,
            )
        except (TimeoutError, httpx.TimeoutException):
            raise TimeoutError(f"{method} did not finish within {self.timeout}s") from None
        if response.status_code == 404 and self.session_id:
            raise ToolSessionError(
                f"{method}: the server no longer knows session {self.session_id}; "
                "the env's state may be gone (open a new session)"
            )
        if response.status_code >= 400:
            raise ToolSessionError(
                f"{method}: HTTP {response.status_code} from {self.mcp_url}: "
                f"{response.text[:300] or '(empty body)'}"
            )
        return response

    async def _request(self, method: str, params: dict) -> dict:
        rid = next(self._ids)
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        response = await self._post(message, method)
        result = _reply(method, response, rid)
        if method == "initialize":
            self.session_id = response.headers.get("mcp-session-id") or None
        return result

    async def list_tools(self) -> list[EnvironmentTool]:
        """Every tool the session's role may use, following `nextCursor` to the last page."""
        tools: list[EnvironmentTool] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page, cursor = _tools_page(
                await self._request("tools/list", {"cursor": cursor} if cursor else {})
            )
            tools.extend(page)
            if cursor is None:
                return tools
            if cursor in seen:
                raise ToolSessionError(f"tools/list: the server repeated cursor {cursor!r}")
            seen.add(cursor)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call a tool; its failure comes back as a result with `isError` set."""
        return _tool_result(
            await self._request("tools/call", {"name": name, "arguments": arguments or {}})
        )
