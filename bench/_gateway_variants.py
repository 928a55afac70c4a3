"""A gateway process with another HTTP client towards the env or another HTTP server, for
bench/gateway.py's comparison. The product has one of each (fastpost's pooled connections,
uvicorn with httptools and the gateway's hot path for `POST /mcp`); the alternatives live here,
behind fastpost.PostPool's interface (`asgi`: uvicorn with httptools, every request through the
ASGI app, as before the hot path).

    python bench/_gateway_variants.py --upstream httpx|aiohttp|fastpost \
        --server httptools|asgi|h11 [--answer full|serve-only|forward-only] \
        -- --env echo=http://127.0.0.1:PORT --port PORT

`--answer` takes the gateway apart, to see where its CPU per call goes: `serve-only` answers
every `POST /mcp` with one fixed tool result (the HTTP serving, auth and the per-role count,
nothing else), `forward-only` sends the request's tools/call to the env through the gateway's
forwarder (McpHttp on fastpost) and answers the env's result, without the MCP method layer,
role rules or call log. Neither is a gateway anyone should run.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentenv_protocol.fastpost import (
    ForwardConnectError,
    ForwardError,
    ForwardTimeout,
    RawResponse,
)

POOL_SIZE = 256  # the same bound fastpost.PostPool keeps by default


class HttpxPool:
    """PostPool's interface on an httpx.AsyncClient (what the gateway used before fastpost)."""

    def __init__(self, base_url: str, *, connect_timeout: float = 3.0, timeout: float = 120.0):
        import httpx

        self.base = base_url.rstrip("/")
        self.timeout = timeout
        self._httpx = httpx
        self._client = httpx.AsyncClient(
            base_url=self.base,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=POOL_SIZE, max_keepalive_connections=POOL_SIZE),
            trust_env=False,
        )

    async def post(
        self, path: str, body: bytes, headers: dict | None = None, timeout: float | None = None
    ) -> RawResponse:
        httpx = self._httpx
        sent = {"content-type": "application/json", **(headers or {})}
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        try:
            r = await self._client.post(path, content=body, headers=sent, **kwargs)
        except httpx.ConnectError as e:
            raise ForwardConnectError(str(e)) from None
        except httpx.TimeoutException as e:
            raise ForwardTimeout(str(e) or "timed out") from None
        except httpx.HTTPError as e:
            raise ForwardError(str(e)) from None
        return RawResponse(r.status_code, dict(r.headers), r.content, self.base + path)

    async def aclose(self) -> None:
        await self._client.aclose()


class AiohttpPool:
    """PostPool's interface on an aiohttp.ClientSession (made in the serving loop)."""

    def __init__(self, base_url: str, *, connect_timeout: float = 3.0, timeout: float = 120.0):
        self.base = base_url.rstrip("/")
        self.connect_timeout, self.timeout = connect_timeout, timeout
        self._session: Any = None

    def _open(self) -> Any:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=POOL_SIZE, limit_per_host=POOL_SIZE),
                timeout=aiohttp.ClientTimeout(total=self.timeout, connect=self.connect_timeout),
                skip_auto_headers=("User-Agent",),
            )
        return self._session

    async def post(
        self, path: str, body: bytes, headers: dict | None = None, timeout: float | None = None
    ) -> RawResponse:
        import aiohttp

        session = self._open()
        sent = {"content-type": "application/json", **(headers or {})}
        try:
            async with session.post(self.base + path, data=body, headers=sent) as r:
                content = await r.read()
                return RawResponse(r.status, dict(r.headers), content, self.base + path)
        except aiohttp.ClientConnectorError as e:
            raise ForwardConnectError(str(e)) from None
        except TimeoutError as e:
            raise ForwardTimeout(str(e) or "timed out") from None
        except aiohttp.ClientError as e:
            raise ForwardError(str(e)) from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


UPSTREAMS = {"fastpost": None, "httpx": HttpxPool, "aiohttp": AiohttpPool}
FIXED_RESULT = b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": false}}'


def take_apart(gateway_class: Any, answer: str) -> None:
    """Replace `Gateway.answer_mcp_post` (what the hot path asks) by a part of it (`--answer`)."""
    import json

    async def serve_only(self, caller, key, headers, body):
        self.release(key)
        return 200, FIXED_RESULT, []

    async def forward_only(self, caller, key, headers, body):
        try:
            params = json.loads(body)["params"]
            route = self.routes[params["name"]]
            result, _ = await self.forwarder.call(route, params.get("arguments") or {}, caller)
            return 200, json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode(), []
        finally:
            self.release(key)

    gateway_class.answer_mcp_post = {"serve-only": serve_only, "forward-only": forward_only}[answer]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream", choices=sorted(UPSTREAMS), default="fastpost")
    parser.add_argument("--server", choices=("httptools", "asgi", "h11"), default="httptools")
    parser.add_argument("--answer", choices=("full", "serve-only", "forward-only"), default="full")
    args, rest = parser.parse_known_args()
    rest = [a for a in rest if a != "--"]
    from agentenv_protocol import serving
    from agentenv_protocol.gateway import __main__ as gateway_main
    from agentenv_protocol.gateway import app, mcp

    pool = UPSTREAMS[args.upstream]
    if pool is not None:
        mcp.PostPool = pool  # type: ignore[misc,assignment]
    if args.answer != "full":
        take_apart(app.Gateway, args.answer)
    if args.server == "asgi":
        app.Gateway.http_protocol = lambda self, base: base  # type: ignore[method-assign]
    if args.server == "h11":
        ours = serving.uvicorn_options
        serving.uvicorn_options = lambda **kw: {**ours(**kw), "http": "h11"}  # type: ignore[assignment]
    return gateway_main.main(rest)


if __name__ == "__main__":
    sys.exit(main())
