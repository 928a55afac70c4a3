"""`RequireToken`: the OpenEnv server's optional bearer token (`serve --token`).

Local sandboxes share the machine's loopback, so without a token a process in one (an agent
under training) can open a session of its own on the server and learn the reward of any
answer before giving it. With a token, every HTTP request and WebSocket upgrade must carry
`Authorization: Bearer TOKEN` (openenv's clients send it with `headers=`); only `/health`
answers without it. A refused request changes nothing: it never reaches the app.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

#: Paths that answer without the token (liveness probes; they say nothing about the tasks).
OPEN_PATHS = frozenset({"/health"})
HINT = (
    "this server requires a bearer token (agent-env openenv serve --token): pass "
    "headers={'Authorization': 'Bearer <token>'} to the openenv client"
)


def check_token(token: Any) -> str:
    """`token` if it can be sent in a header (non-empty, printable, no whitespace), else
    `ValueError` naming what is wrong."""
    if not isinstance(token, str) or not token:
        raise ValueError("token= is a non-empty string")
    if any(c.isspace() or not c.isprintable() for c in token):
        raise ValueError("the token cannot hold whitespace or control characters")
    return token


class RequireToken:
    """ASGI middleware: requests without `Authorization: Bearer <token>` get 401 (HTTP) or a
    refused upgrade (WebSocket: close before accept, which the server answers with 403)."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self._expected = b"Bearer " + check_token(token).encode()

    def _authorized(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                return hmac.compare_digest(value, self._expected)
        return False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if kind == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": "bearer token"})
            return
        body = json.dumps({"detail": HINT}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
