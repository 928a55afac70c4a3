"""An async client for one environment (or a gateway): its card, the data plane, and its tools.

Every call has a timeout; failures raise `agentenv_protocol.errors` classes: `EnvUnavailable`
for an unreachable or silent env, one `RpcError` subclass per JSON-RPC code, `ToolCallError`
for a tool's error result (when asked to raise).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import httpx
from pydantic import TypeAdapter

from agentenv_protocol import _http
from agentenv_protocol.context import ROLE_HEADER, ROLE_META_KEY
from agentenv_protocol.errors import EnvUnavailable, ProtocolError, ToolCallError, rpc_error_from
from agentenv_protocol.fastpost import ForwardError, ForwardTimeout, PostPool
from agentenv_protocol.mcp_http import McpHttp, McpHttpError
from agentenv_protocol.types import (
    METHOD_ADD,
    METHOD_GET,
    METHOD_RESET,
    READY_PATH,
    RPC_PATH,
    WELL_KNOWN_PATH,
    EnvironmentCard,
    EnvironmentTool,
    Part,
)

_PARTS = TypeAdapter(list[Part])


@attrs.frozen(kw_only=True)
class ToolResult:
    """A tool's answer: the text of its content blocks, its structured value, and the error flag."""

    is_error: bool = False
    content: list[dict] = attrs.field(factory=list)
    structured: Any = None

    @property
    def text(self) -> str:
        return "\n".join(c.get("text", "") for c in self.content if c.get("type") == "text")

    @property
    def isError(self) -> bool:  # noqa: N802 - the existing SDK's ToolSession result spells it so
        return self.is_error

    def json(self) -> Any:
        """The structured value, else the text parsed as JSON."""
        return self.structured if self.structured is not None else json.loads(self.text)


def _parts_json(parts: list) -> list:
    return [p.model_dump(exclude_none=True) if hasattr(p, "model_dump") else p for p in parts]


class EnvClient:
    """Talks to the env at `base_url` (`http://host:port`); use as `async with EnvClient(url) as env:`."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        token: str | None = None,
        role: str | None = None,
        headers: dict[str, str] | None = None,
        mcp_path: str | None = None,
        http: httpx.AsyncClient | None = None,
        lean_mcp: bool = False,
    ) -> None:
        """`lean_mcp`: MCP requests (`list_tools`, `call_tool`) go over `fastpost`'s keep-alive
        connections (plain http, asyncio only) instead of httpx, a few hundred microseconds
        less per call: for a caller on a hot path, such as an OpenEnv step through a run's
        gateway."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.role = role
        extra = dict(headers or {})
        if token:
            extra["authorization"] = f"Bearer {token}"
        if role:
            extra[ROLE_HEADER] = role
        self._own_http = http is None
        self.http = http or _http.client(timeout, connect=connect_timeout, headers=extra)
        self._mcp_path = mcp_path
        self._mcp: McpHttp | None = None
        self._headers = extra
        self._connect_timeout = connect_timeout
        self._pool: PostPool | None = None
        self._lean = lean_mcp

    async def __aenter__(self) -> EnvClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
        if self._own_http:
            await self.http.aclose()

    def _unavailable(
        self, what: str, exc: Exception, timeout: float | None = None
    ) -> EnvUnavailable:
        if isinstance(exc, (httpx.TimeoutException, ForwardTimeout)):
            return EnvUnavailable(
                f"{self.base_url} did not answer {what} within {timeout or self.timeout}s"
            )
        return EnvUnavailable(
            f"{self.base_url} is unreachable ({what}): {type(exc).__name__}: {exc}"
        )

    async def _get(self, path: str, what: str, timeout: float | None = None) -> httpx.Response:
        try:
            return await self.http.get(
                self.base_url + path, timeout=timeout or httpx.USE_CLIENT_DEFAULT
            )
        except httpx.HTTPError as e:
            raise self._unavailable(what, e, timeout) from e

    async def card(self, *, timeout: float | None = None) -> EnvironmentCard:
        response = await self._get(WELL_KNOWN_PATH, "the card request", timeout)
        if response.status_code != 200:
            raise ProtocolError(
                f"{self.base_url}{WELL_KNOWN_PATH}: HTTP {response.status_code}: {response.text[:200]}"
            )
        return EnvironmentCard.model_validate(response.json())

    async def ready(self) -> bool:
        """True when the env answers its readiness probe (or, lacking one, its card)."""
        try:
            response = await self.http.get(self.base_url + READY_PATH, timeout=2.0)
            if response.status_code == 404:
                response = await self.http.get(self.base_url + WELL_KNOWN_PATH, timeout=2.0)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def wait_ready(self, timeout: float = 30.0, interval: float = 0.05) -> None:
        """Poll until the env is ready; `EnvUnavailable` after `timeout` seconds."""
        import anyio

        with anyio.move_on_after(timeout):
            while not await self.ready():
                await anyio.sleep(interval)
            return
        raise EnvUnavailable(f"{self.base_url} was not ready within {timeout}s")

    # --- data plane ------------------------------------------------------------------------
    async def rpc(
        self, method: str, params: dict | None = None, *, timeout: float | None = None
    ) -> Any:
        """Call a data-plane method; returns its `result` or raises the `RpcError` for its code."""
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        try:
            response = await self.http.post(
                self.base_url + RPC_PATH, json=body, timeout=timeout or httpx.USE_CLIENT_DEFAULT
            )
        except httpx.HTTPError as e:
            raise self._unavailable(method, e, timeout) from e
        try:
            answer = response.json()
        except ValueError:
            raise ProtocolError(
                f"{method}: HTTP {response.status_code} from {self.base_url}{RPC_PATH}: "
                f"{response.text[:200] or '(empty body)'}"
            ) from None
        if isinstance(answer, dict) and "error" in answer:
            raise rpc_error_from(answer["error"], method=method)
        if response.status_code != 200 or not isinstance(answer, dict) or "result" not in answer:
            raise ProtocolError(
                f"{method}: unexpected answer (HTTP {response.status_code}): {str(answer)[:200]}"
            )
        return answer["result"]

    async def reset(self, *, timeout: float | None = None) -> None:
        await self.rpc(METHOD_RESET, {}, timeout=timeout)

    async def add(self, parts: list, *, timeout: float | None = None) -> None:
        await self.rpc(METHOD_ADD, {"parts": _parts_json(parts)}, timeout=timeout)

    async def get(self, *, timeout: float | None = None) -> list:
        result = await self.rpc(METHOD_GET, {}, timeout=timeout)
        return _PARTS.validate_python((result or {}).get("parts", []))

    async def extension(
        self,
        path: str,
        params: dict | None = None,
        *,
        method: str = "POST",
        timeout: float | None = None,
    ) -> Any:
        """Invoke a REST extension at `path` (as advertised on the card); returns its JSON."""
        kwargs: dict = {"timeout": timeout} if timeout else {}
        try:
            if method.upper() == "GET":
                response = await self.http.get(self.base_url + path, params=params or {}, **kwargs)
            else:
                response = await self.http.request(
                    method.upper(), self.base_url + path, json=params or {}, **kwargs
                )
        except httpx.HTTPError as e:
            raise self._unavailable(f"{method} {path}", e, timeout) from e
        if response.status_code >= 400:
            raise ProtocolError(
                f"{method} {path}: HTTP {response.status_code}: {response.text[:300]}"
            )
        return response.json()

    # --- MCP tools -------------------------------------------------------------------------
    async def _mcp_client(self) -> McpHttp:
        if self._mcp is None:
            path = self._mcp_path
            if path is None:
                try:
                    path = (await self.card()).mcp_path()
                except ProtocolError:
                    path = "/mcp"
            if self._lean and self.base_url.startswith("http://"):  # fastpost: plain http only
                self._pool = PostPool(
                    self.base_url, connect_timeout=self._connect_timeout, timeout=self.timeout
                )
                self._mcp = McpHttp(self.base_url + path, pool=self._pool, headers=self._headers)
            else:
                self._mcp = McpHttp(self.base_url + path, self.http)
        return self._mcp

    async def _mcp_request(self, method: str, params: dict, timeout: float | None) -> dict:
        mcp = await self._mcp_client()
        meta = {ROLE_META_KEY: self.role} if self.role else None
        try:
            answer = await mcp.request(method, params, meta=meta, timeout=timeout)
        except (httpx.HTTPError, ForwardError) as e:
            raise self._unavailable(method, e, timeout) from e
        except McpHttpError as e:
            raise ProtocolError(f"{method}: {e}") from None
        if "error" in answer:
            raise rpc_error_from(answer["error"], method=method)
        return answer["result"]

    async def list_tools(self, *, timeout: float | None = None) -> list[EnvironmentTool]:
        result = await self._mcp_request("tools/list", {}, timeout)
        return [
            EnvironmentTool(
                name=t["name"], description=t.get("description"), inputSchema=t.get("inputSchema")
            )
            for t in result.get("tools", [])
        ]

    async def call_tool(
        self,
        name: str,
        arguments: dict | None = None,
        *,
        raise_on_error: bool = False,
        timeout: float | None = None,
    ) -> ToolResult:
        """Call a tool; an error result comes back with `is_error` (or raises `ToolCallError` if asked)."""
        result = await self._mcp_request(
            "tools/call", {"name": name, "arguments": arguments or {}}, timeout
        )
        out = ToolResult(
            is_error=bool(result.get("isError")),
            content=list(result.get("content") or []),
            structured=result.get("structuredContent"),
        )
        if out.is_error and raise_on_error:
            raise ToolCallError(name, out.text)
        return out


# The existing SDK's card and data-plane helpers live in this module's namespace.
from agentenv_protocol.client_helpers import (  # noqa: E402
    ExtensionCallError,
    add_data,
    extension_params,
    find_child,
    find_extension,
    find_extension_method,
    find_tool,
    get_card,
    get_data,
    get_interface_manifest,
    intake_declaration,
    invoke_extension,
    mcp_path,
    reset_data,
    supports_v1,
)

__all__ = [
    "EnvClient",
    "ExtensionCallError",
    "ToolResult",
    "add_data",
    "extension_params",
    "find_child",
    "find_extension",
    "find_extension_method",
    "find_tool",
    "get_card",
    "get_data",
    "get_interface_manifest",
    "intake_declaration",
    "invoke_extension",
    "mcp_path",
    "reset_data",
    "supports_v1",
]
