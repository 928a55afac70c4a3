"""A lean MCP-over-HTTP requester on a pooled httpx client: one POST per request.

Speaks the per-request (2026-07-28) envelope first (our gateway answers it) and falls back,
once per requester, to the initialize handshake (with a session id, JSON or SSE answers) for
servers that only know the older revisions: env servers on mcp 1.x, ours included, and FastMCP.
The client and the gateway both use it; it imports nothing from the mcp package.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import httpx

from agentenv_protocol import jsonrpc

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-06-18"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
META_PROTOCOL = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPS = "io.modelcontextprotocol/clientCapabilities"
ACCEPT = "application/json, text/event-stream"
UNSUPPORTED_VERSION = -32022


class McpHttpError(Exception):
    """The server answered with something that is not a JSON-RPC response."""


def sse_data(text: str) -> list[str]:
    """The `data` of each complete event of an SSE body (an event ends at a blank line; one cut
    off at the end of the body is dropped, as the SSE spec says); events without data are skipped."""
    blocks = text.replace("\r\n", "\n").split("\n\n")[:-1]
    found = []
    for block in blocks:
        data = "\n".join(
            line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
        )
        if data.strip():
            found.append(data)
    return found


def is_reply(message: Any, rid: Any) -> bool:
    """Whether `message` is the JSON-RPC response to request `rid`."""
    return (
        isinstance(message, dict)
        and message.get("id") == rid
        and ("result" in message or "error" in message)
    )


def _sse_message(text: str, rid: Any) -> dict | None:
    for data in sse_data(text):
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if is_reply(message, rid):
            return message
    return None


class McpHttp:
    """Requests against one MCP endpoint (`url` ends in `/mcp`)."""

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient | None = None,
        *,
        pool: Any = None,
        client_name: str = "agentenv-protocol",
        headers: dict[str, str] | None = None,
    ) -> None:
        if (http is None) == (pool is None):
            raise ValueError(
                "give exactly one of http (an httpx.AsyncClient) or pool (a fastpost.PostPool)"
            )
        self.url = url
        self.http = http
        self.pool = pool
        self._path = "/" + url.split("://", 1)[-1].partition("/")[2]
        self.era: str | None = None
        self.session_id: str | None = None
        self.legacy_version = LEGACY_VERSION
        self._ids = itertools.count(1)
        self._info = {"name": client_name, "version": "1"}
        self._envelope = {
            META_PROTOCOL: MODERN_VERSION,
            META_CLIENT_INFO: self._info,
            META_CLIENT_CAPS: {},
        }
        self._headers = dict(headers or {})
        self._handshaking: anyio.Lock | None = None
        #: the legacy headers as sent, for the (session id, version) they were made for
        self._legacy_sent: tuple[tuple, dict] | None = None

    async def request(
        self,
        method: str,
        params: dict | None = None,
        *,
        meta: dict | None = None,
        timeout: float | httpx.Timeout | None = None,
        rid: Any = None,
    ) -> dict:
        """The JSON-RPC response (with `result` or `error`) to one request."""
        if self.era != "legacy":
            response = await self._modern(method, params, meta, timeout, rid)
            if response is not None:
                self.era = "modern"
                return response
            self.era = "legacy"
        if self.session_id is None and method != "initialize":
            if self._handshaking is None:
                self._handshaking = anyio.Lock()
            async with self._handshaking:  # concurrent first calls share one handshake
                if self.session_id is None:
                    await self._handshake(timeout)
        return await self._legacy(method, params, meta, timeout, rid)

    def _post_headers(self, extra: dict) -> dict:
        if self.pool is not None:
            return {"accept": ACCEPT, **self._headers, **extra}
        return {"accept": ACCEPT, "content-type": "application/json", **self._headers, **extra}

    async def _send(self, message: dict, headers: dict, timeout: Any) -> Any:
        body = jsonrpc.dumps(message).encode()
        if self.http is None:  # the constructor took exactly one of http and pool
            return await self.pool.post(self._path, body, headers, timeout)
        kwargs = {} if timeout is None else {"timeout": timeout}
        return await self.http.post(self.url, content=body, headers=headers, **kwargs)

    def _decode(self, response: Any, rid: Any) -> dict:
        ctype = response.headers.get("content-type", "")
        if ctype.startswith("text/event-stream"):
            message = _sse_message(response.text, rid)
        else:
            try:
                message = response.json()
            except ValueError:
                message = None
        if not isinstance(message, dict) or not ("result" in message or "error" in message):
            raise McpHttpError(
                f"HTTP {response.status_code} from {self.url}: "
                f"{response.text[:300] or '(empty body)'}"
            )
        return message

    async def _modern(self, method, params, meta, timeout, rid) -> dict | None:
        rid = next(self._ids) if rid is None else rid
        body_params = dict(params or {})
        body_params["_meta"] = {**self._envelope, **meta} if meta else self._envelope
        headers = {"mcp-protocol-version": MODERN_VERSION, "mcp-method": method}
        if (
            method == "tools/call"
            and isinstance(body_params.get("name"), str)
            and body_params["name"].isascii()
        ):
            headers["mcp-name"] = body_params["name"]
        response = await self._send(
            {"jsonrpc": "2.0", "id": rid, "method": method, "params": body_params},
            self._post_headers(headers),
            timeout,
        )
        if response.status_code in (401, 403):
            raise McpHttpError(
                f"HTTP {response.status_code} from {self.url}: {response.text[:300]}"
            )
        if self.era == "modern" and response.status_code < 500:
            return self._decode(response, rid)
        try:
            message = self._decode(response, rid)
        except McpHttpError:
            if response.status_code >= 400:
                return None
            raise
        error = message.get("error")
        if (
            isinstance(error, dict)
            and self.era != "modern"  # concurrent first calls may all be refused
            and (error.get("code") == UNSUPPORTED_VERSION or response.status_code >= 400)
        ):
            return None
        return message

    async def _handshake(self, timeout) -> None:
        rid = next(self._ids)
        message = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": self._info,
            },
        }
        response = await self._send(message, self._post_headers({}), timeout)
        answer = self._decode(response, rid)
        if "error" in answer:
            raise McpHttpError(f"initialize failed at {self.url}: {answer['error']}")
        self.session_id = response.headers.get("mcp-session-id") or ""
        self.legacy_version = (answer.get("result") or {}).get("protocolVersion") or LEGACY_VERSION
        await self._send(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            self._legacy_headers(),
            timeout,
        )

    def _legacy_headers(self) -> dict:
        """The headers of a legacy request, made again only when the session or version
        changes (every request of a session sends the same)."""
        key = (self.session_id, self.legacy_version)
        if self._legacy_sent is None or self._legacy_sent[0] != key:
            headers = {"mcp-protocol-version": self.legacy_version}
            if self.session_id:
                headers["mcp-session-id"] = self.session_id
            self._legacy_sent = (key, self._post_headers(headers))
        return self._legacy_sent[1]

    async def _legacy(self, method, params, meta, timeout, rid) -> dict:
        rid = next(self._ids) if rid is None else rid
        # serialised at once, so the caller's dicts are shared rather than copied
        body_params = {**(params or {}), "_meta": meta} if meta else (params or {})
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": body_params}
        response = await self._send(message, self._legacy_headers(), timeout)
        if response.status_code == 404 and self.session_id:
            self.session_id = None  # the server forgot the session: handshake again, once
            await self._handshake(timeout)
            response = await self._send(message, self._legacy_headers(), timeout)
        return self._decode(response, rid)
