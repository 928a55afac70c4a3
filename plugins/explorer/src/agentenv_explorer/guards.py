"""The explorer's guards, one ASGI middleware: a Host allow-list (DNS rebinding), no
cross-site writes (CSRF: `Sec-Fetch-Site`, else `Origin`), a bearer token (`agent-env up` always
sets one: sandboxed agents share the machine's loopback), and security headers on every answer."""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TOKEN_COOKIE = "agentenv_explorer_token"
HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def _host_name(value: str) -> str:
    """`name` of a Host header `name[:port]` (brackets kept for IPv6 literals)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guards:
    """Wraps the app; refusals are JSON `{"detail": ...}` (421 host, 403 cross-site, 401
    token)."""

    def __init__(
        self, app: Any, *, bind_host: str, allowed_hosts: Iterable[str] = (), token: str | None
    ):
        self.app = app
        self.token = token
        names = {h.lower() for h in allowed_hosts} | set(LOOPBACK_NAMES)
        bound = bind_host.strip("[]").lower()
        if bound not in ("0.0.0.0", "::"):  # the address it answers on names itself
            names.add(f"[{bound}]" if ":" in bound else bound)
        self.allowed = names

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, detail = refusal
            await _json(send, status, {"detail": detail})
            return

        extra = list(HEADERS)
        if self.token is not None and _query_token(scope) == self.token:
            cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            extra.append((b"set-cookie", cookie.encode("latin-1")))

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: dict, headers: dict[str, str]) -> tuple[int, str] | None:
        host = _host_name(headers.get("host", ""))
        if host not in self.allowed:
            return 421, f"host {host!r} not allowed"
        if scope["method"] not in SAFE_METHODS and _cross_site(headers):
            return 403, "cross-site request refused"
        if self.token is not None and not self._has_token(scope, headers):
            return 401, (
                "a token is required: open the URL `agent-env up` printed (it carries "
                "?token=...) or send 'Authorization: Bearer TOKEN'"
            )
        return None

    def _has_token(self, scope: dict, headers: dict[str, str]) -> bool:
        assert self.token is not None
        given = []
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            given.append(auth[7:].strip())
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == TOKEN_COOKIE:
                given.append(value)
        query = _query_token(scope)
        if query is not None:
            given.append(query)
        return any(hmac.compare_digest(g.encode(), self.token.encode()) for g in given)


def _query_token(scope: dict) -> str | None:
    from urllib.parse import parse_qs

    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


def _cross_site(headers: dict[str, str]) -> bool:
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site not in ("same-origin", "none")
    origin = headers.get("origin")
    if not origin or origin == "null":
        return origin == "null"
    return urlsplit(origin).netloc.lower() != headers.get("host", "").lower()


async def _json(send: Any, status: int, body: dict) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
