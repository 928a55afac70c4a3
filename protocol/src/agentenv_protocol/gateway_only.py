"""Env servers that answer only their gateway: `GatewayOnly` wraps an env's ASGI app and refuses
(401) every request that does not carry the env's secret in the `agentenv-env-secret` header,
except the card and `/healthz` (what a deploy step polls and anyone may read).

The secret comes from `AGENTENV_ENV_SECRET`, set by the deploy step that started the env; the
run's gateway adds it to every request it forwards (MCP, data plane, extensions). Without the
variable (an env started by hand, or a task that opted out with `allow_direct_calls`) nothing
is checked.
"""

from __future__ import annotations

import hmac
import os
from typing import Any

from agentenv_protocol import errors as E
from agentenv_protocol.asgi import respond
from agentenv_protocol.constants import (
    ENV_SECRET_ENV,
    ENV_SECRET_HEADER,
    MCP_PATH,
    READY_PATH,
    RPC_PATH,
    WELL_KNOWN_PATH,
)
from agentenv_protocol.jsonrpc import error as rpc_error
from agentenv_protocol.types import error_body

OPEN_PATHS = frozenset({WELL_KNOWN_PATH, READY_PATH})
_HEADER = ENV_SECRET_HEADER.encode()
MESSAGE = (
    "this environment answers only its gateway: the request lacks the env's secret "
    f"({ENV_SECRET_HEADER} header); call it through the run's gateway"
)


def env_secret() -> str | None:
    """The secret this env server checks (`AGENTENV_ENV_SECRET`), None when unset or empty."""
    return os.environ.get(ENV_SECRET_ENV) or None


class GatewayOnly:
    """ASGI middleware: `app` answers only requests carrying `secret` (open paths excepted)."""

    def __init__(self, app: Any, secret: str) -> None:
        self.app = app
        self.secret = secret.encode()

    def __getattr__(self, name: str) -> Any:
        """Anything else is the wrapped app's: fastmcp's `run` reads `app.state` of the app it
        serves (without this an env mounted on fastmcp's FastMCP and given an env secret died
        at start, found by tests/test_redteam_local.py)."""
        return getattr(self.app, name)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") not in OPEN_PATHS:
            given = next((v for k, v in scope.get("headers") or () if k == _HEADER), b"")
            if not hmac.compare_digest(given, self.secret):
                await respond(send, 401, _refusal(scope.get("path") or ""))
                return
        await self.app(scope, receive, send)


def _refusal(path: str) -> dict:
    if path.rstrip("/") in (MCP_PATH, RPC_PATH):
        return rpc_error(None, E.SERVER_ERROR, MESSAGE, {"code": "unauthorized"})
    return error_body("unauthorized", MESSAGE)


def guard(app: Any) -> Any:
    """`app` wrapped in `GatewayOnly` when this process has an env secret, else `app`."""
    secret = env_secret()
    return GatewayOnly(app, secret) if secret else app
