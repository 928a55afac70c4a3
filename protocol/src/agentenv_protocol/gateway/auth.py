"""Who is calling the gateway: bearer tokens bound to roles, the admin token, session ids, and
`TokenInPath`, the capability-URL middleware for callers that cannot send a header."""

from __future__ import annotations

import hashlib
import secrets as pysecrets
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from agentenv_protocol.context import DEFAULT_ROLE, ROLE_HEADER

_ROLE_HEADER = ROLE_HEADER.lower().encode()
CAPABILITY_PREFIX = "/k/"


@attrs.define(slots=True)
class Caller:
    """An authenticated caller: the role it acts as, whether it holds the admin token, its
    session, and the envs its token reaches (`envs`: None = every env the gateway fronts)."""

    role: str
    admin: bool
    session: str
    envs: frozenset[str] | None = None

    def reaches(self, env: str | None) -> bool:
        """Whether this caller may see and call the tools of `env` (the gateway's own tools,
        env None, are in every scope)."""
        return self.envs is None or env is None or env in self.envs


@attrs.frozen(slots=True)
class Grant:
    """What one agent token may do: act as `role`, reach `envs` (None = all)."""

    role: str
    envs: frozenset[str] | None = None


class Auth:
    """Token -> role bindings plus the admin token; `authenticate(headers)` answers a Caller or
    (status, message) for a 401/403."""

    def __init__(
        self, admin_token: str | None, tokens: dict[str, str], on_token: Callable[[str], None]
    ) -> None:
        self.admin_token = admin_token or pysecrets.token_urlsafe(32)
        self.tokens = tokens
        self.scopes: dict[str, frozenset[str]] = {}
        self._on_token = on_token
        self._sessions: dict[str, str] = {}

    def issue_token(self, role: str, envs: Iterable[str] | None = None) -> str:
        """A new token bound to `role`; with `envs`, it reaches only those envs' tools."""
        token = pysecrets.token_urlsafe(32)
        self.tokens[token] = role
        if envs is not None:
            self.scopes[token] = frozenset(envs)
        self._on_token(token)
        return token

    def revoke_all(self) -> list[str]:
        """Revoke every issued token (the admin token stays): a warm pool's instance between
        two episodes. Forgets their scopes and session ids too, so nothing here grows with
        the episodes a long-lived gateway serves. Returns the revoked tokens."""
        revoked = list(self.tokens)
        self.tokens.clear()
        self.scopes.clear()
        self._sessions.clear()
        return revoked

    def grant(self, token: str) -> Grant | None:
        role = self.tokens.get(token)
        return None if role is None else Grant(role, self.scopes.get(token))

    def authenticate(self, headers: Iterable[tuple[bytes, bytes]]) -> Caller | tuple[int, str]:
        """Who sends a request with these (lower-cased, ASGI-style) headers."""
        token = claimed = None
        for key, value in headers:
            if key == b"authorization":
                raw = value.decode("latin-1")
                if raw[:7].lower() == "bearer ":
                    token = raw[7:].strip()
            elif key == _ROLE_HEADER:
                claimed = value.decode("latin-1").strip() or None
        if not token:
            return 401, "missing bearer token: send 'Authorization: Bearer <token>'"
        if pysecrets.compare_digest(token, self.admin_token):
            return Caller(claimed or DEFAULT_ROLE, True, self.session(token))
        role = self.tokens.get(token)
        if role is None:
            return 401, "invalid bearer token"
        if claimed and claimed != role:
            return 403, f"this token is bound to role {role!r}; it cannot act as {claimed!r}"
        return Caller(role, False, self.session(token), self.scopes.get(token))

    def session(self, token: str) -> str:
        """A stable, non-secret session id per (valid) token, stamped on forwarded calls."""
        session = self._sessions.get(token)
        if session is None:
            session = self._sessions[token] = "s-" + hashlib.sha256(token.encode()).hexdigest()[:16]
        return session


class TokenInPath:
    """ASGI wrapper: `/k/<token>/rest` becomes `/rest` with `Authorization: Bearer <token>`, so a
    capability URL (`<gateway>/k/<token>/mcp`) works for callers that cannot set headers."""

    def __init__(self, app: Any, prefix: str = CAPABILITY_PREFIX) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.prefix):
            token, _, rest = scope["path"][len(self.prefix) :].partition("/")
            path = "/" + rest
            headers = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
            headers.append((b"authorization", b"Bearer " + token.encode("latin-1")))
            scope = dict(scope, path=path, raw_path=path.encode("latin-1"), headers=headers)
        await self.app(scope, receive, send)

    def http_protocol(self, base: type) -> type:
        """The wrapped app's HTTP protocol (`serving.uvicorn_options`): a capability URL is
        served by the ASGI path, every other request as the app would serve it."""
        inner = getattr(self.app, "http_protocol", None)
        return base if inner is None else inner(base)
